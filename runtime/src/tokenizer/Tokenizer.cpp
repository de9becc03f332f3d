//===- Tokenizer.cpp - Hugging Face tokenizer.json, in C++ ----------------===//
//
// The pipeline of the `tokenizers` library as its JavaScript port runs it:
// added tokens are split out of the raw text first (those not normalized),
// the rest is normalized and split again on the normalized added tokens,
// then pre-tokenized and encoded by the model; the post-processor adds
// special tokens on request.
//
//===----------------------------------------------------------------------===//

#include "specrt/Tokenizer.h"

#include "BPE.h"
#include "Components.h"
#include "Text.h"

#include <nlohmann/json.hpp>

#include <array>
#include <fstream>
#include <sstream>
#include <unordered_map>

using namespace specrt;
using namespace specrt::tok;

namespace {
/// Longest-match splitting on a set of strings, leftmost first (the
/// reference's DictionarySplitter).
class DictionarySplitter {
public:
  void add(const std::string &word) {
    if (word.empty())
      return;
    int node = 0;
    for (unsigned char c : word) {
      int next = child(node, c);
      if (next < 0) {
        next = static_cast<int>(nodes.size());
        nodes.emplace_back();
        if (node == 0)
          root[c] = next;
        else
          nodes[node].children.emplace_back(c, next);
      }
      node = next;
    }
    nodes[node].length = word.size();
  }
  bool empty() const { return nodes.size() == 1; }

  /// Splits `text` into pieces: the text between matches and the matches.
  std::vector<std::string_view> split(std::string_view text) const {
    std::vector<std::string_view> out;
    size_t start = 0, i = 0;
    while (i < text.size()) {
      size_t match = 0;
      int node = 0;
      for (size_t j = i; j < text.size(); ++j) {
        node = child(node, static_cast<unsigned char>(text[j]));
        if (node < 0)
          break;
        if (nodes[node].length)
          match = nodes[node].length;
      }
      if (!match) {
        ++i;
        continue;
      }
      if (i > start)
        out.push_back(text.substr(start, i - start));
      out.push_back(text.substr(i, match));
      i += match;
      start = i;
    }
    if (start < text.size())
      out.push_back(text.substr(start));
    return out;
  }

private:
  struct Node {
    std::vector<std::pair<unsigned char, int>> children;
    size_t length = 0; // of the word ending here, 0 when none
  };
  int child(int node, unsigned char c) const {
    if (node == 0)
      return root[c];
    for (const auto &[byte, next] : nodes[node].children)
      if (byte == c)
        return next;
    return -1;
  }
  std::vector<Node> nodes{Node()};
  std::array<int, 256> root = [] {
    std::array<int, 256> r;
    r.fill(-1);
    return r;
  }();
};

struct AddedToken {
  int32_t id;
  bool lstrip, rstrip, special;
};
} // namespace

struct Tokenizer::Impl {
  std::unique_ptr<BPEModel> model;
  std::unique_ptr<Normalizer> normalizer;
  std::unique_ptr<PreTokenizer> preTokenizer;
  std::unique_ptr<Decoder> decoder;

  std::unordered_set<std::string> addedContents;
  std::unordered_map<std::string, AddedToken> addedByText; // raw and normalized
  std::unordered_set<std::string> specialContents;
  DictionarySplitter unnormalizedSplitter, normalizedSplitter;

  /// The post-processor as templates applied in turn; -1 stands for the
  /// sequence being encoded.
  std::vector<std::vector<int32_t>> templates;

  bool cleanUpSpaces = false;
  std::string endOfWordSuffix;

  void buildPostProcessor(const Json &json, const std::string &path);
  void addTokens(const Json &added);
  void readConfig(const Json &config);
  void encodeSection(std::string_view text, size_t section, std::vector<int32_t> &ids) const;
};

Tokenizer::Tokenizer() : impl(std::make_unique<Impl>()) {}
Tokenizer::~Tokenizer() = default;

void Tokenizer::Impl::buildPostProcessor(const Json &json, const std::string &path) {
  if (json.is_null())
    return;
  if (!json.is_object() || !json.contains("type") || !json["type"].is_string())
    throw LoadError(path + ".type", "missing");
  std::string type = json["type"];
  if (type == "ByteLevel")
    return; // offsets only
  if (type == "Sequence") {
    auto it = json.find("processors");
    if (it == json.end() || !it->is_array())
      throw LoadError(path + ".processors", "expected an array");
    for (size_t i = 0; i < it->size(); ++i)
      buildPostProcessor((*it)[i], path + ".processors[" + std::to_string(i) + "]");
    return;
  }
  if (type != "TemplateProcessing")
    throw LoadError(path + ".type", "the post-processor '" + type + "' is not supported");
  auto single = json.find("single");
  if (single == json.end() || !single->is_array())
    throw LoadError(path + ".single", "expected an array");
  std::vector<int32_t> items;
  for (size_t i = 0; i < single->size(); ++i) {
    const Json &item = (*single)[i];
    std::string itemPath = path + ".single[" + std::to_string(i) + "]";
    if (auto special = item.find("SpecialToken"); special != item.end()) {
      if (!special->contains("id") || !(*special)["id"].is_string())
        throw LoadError(itemPath + ".SpecialToken.id", "expected a token");
      std::string content = (*special)["id"];
      int32_t id = model->idOf(content);
      if (id < 0)
        throw LoadError(itemPath + ".SpecialToken.id", "'" + content + "' is not a token");
      items.push_back(id);
    } else if (auto sequence = item.find("Sequence"); sequence != item.end()) {
      if (!sequence->contains("id") || (*sequence)["id"] != "A")
        throw LoadError(itemPath + ".Sequence.id", "expected \"A\" in the single template");
      items.push_back(-1);
    } else {
      throw LoadError(itemPath, "expected a SpecialToken or a Sequence");
    }
  }
  templates.push_back(std::move(items));
}

/// added_tokens: each added to the model and to the splitter that finds
/// it in raw or normalized text.
void Tokenizer::Impl::addTokens(const Json &added) {
  if (!added.is_null() && !added.is_array())
    throw LoadError("added_tokens", "expected an array");
  for (size_t i = 0; i < (added.is_array() ? added.size() : 0); ++i) {
    const Json &token = added[i];
    std::string path = "added_tokens[" + std::to_string(i) + "]";
    if (!token.is_object() || !token.contains("content") || !token["content"].is_string() ||
        !token.contains("id") || !token["id"].is_number_integer() || token["id"] < 0 ||
        token["id"] > INT32_MAX)
      throw LoadError(path, "expected {\"id\": ..., \"content\": ...}");
    auto flag = [&](const char *key, bool otherwise) {
      auto it = token.find(key);
      return it == token.end() || !it->is_boolean() ? otherwise : it->get<bool>();
    };
    std::string content = token["content"];
    AddedToken entry{token["id"].get<int32_t>(), flag("lstrip", false), flag("rstrip", false),
                     flag("special", false)};
    if (flag("single_word", false))
      throw LoadError(path + ".single_word", "single-word added tokens are not supported");
    bool normalized = flag("normalized", !entry.special);
    model->addToken(content, entry.id);
    addedContents.insert(content);
    if (entry.special)
      specialContents.insert(content);
    addedByText[content] = entry;
    if (normalized && normalizer) {
      std::string normal = normalizer->normalize(content);
      addedByText[normal] = entry;
      normalizedSplitter.add(normal);
    } else {
      unnormalizedSplitter.add(content);
    }
  }
}

/// tokenizer_config.json's settings that change encoding or decoding.
void Tokenizer::Impl::readConfig(const Json &config) {
  // The reference cleans up decoded spaces unless the config says not to.
  cleanUpSpaces = true;
  if (auto it = config.find("clean_up_tokenization_spaces");
      it != config.end() && it->is_boolean())
    cleanUpSpaces = *it;
  if (auto it = config.find("additional_special_tokens"); it != config.end() && it->is_array())
    for (const Json &token : *it)
      if (token.is_string())
        specialContents.insert(token.get<std::string>());
  for (const char *key : {"remove_space", "do_lowercase_and_remove_accent"})
    if (auto it = config.find(key); it != config.end() && it->is_boolean() && *it)
      throw LoadError(key, "is not supported");
}

std::unique_ptr<Tokenizer> Tokenizer::parse(std::string_view tokenizerJson,
                                            std::string_view configJson,
                                            std::string &error) {
  std::unique_ptr<Tokenizer> tokenizer(new Tokenizer());
  Impl &t = *tokenizer->impl;
  try {
    Json json = Json::parse(tokenizerJson);
    if (!json.is_object())
      throw LoadError("$", "expected an object");
    auto member = [&](const char *key) -> const Json & {
      static const Json null;
      auto it = json.find(key);
      return it == json.end() ? null : *it;
    };
    if (member("model").is_null())
      throw LoadError("model", "missing");
    if (!member("truncation").is_null())
      throw LoadError("truncation", "truncation is not supported");
    if (!member("padding").is_null())
      throw LoadError("padding", "padding is not supported");
    t.model = std::make_unique<BPEModel>(member("model"), "model");
    t.normalizer = buildNormalizer(member("normalizer"), "normalizer");
    t.preTokenizer = buildPreTokenizer(member("pre_tokenizer"), "pre_tokenizer");

    t.addTokens(member("added_tokens"));
    ComponentContext context{&t.addedContents};
    t.decoder = buildDecoder(member("decoder"), "decoder", context);
    t.buildPostProcessor(member("post_processor"), "post_processor");
    t.endOfWordSuffix = t.model->endOfWordSuffix();
  } catch (const LoadError &e) {
    error = e.what();
    return nullptr;
  } catch (const Json::exception &e) {
    error = std::string("not valid JSON: ") + e.what();
    return nullptr;
  }

  if (!configJson.empty()) {
    try {
      Json config = Json::parse(configJson);
      if (!config.is_object())
        throw LoadError("$", "expected an object");
      t.readConfig(config);
    } catch (const LoadError &e) {
      error = std::string("tokenizer_config.json: ") + e.what();
      return nullptr;
    } catch (const Json::exception &e) {
      error = std::string("tokenizer_config.json: not valid JSON: ") + e.what();
      return nullptr;
    }
  }
  return tokenizer;
}

bool Tokenizer::canonicalJson(std::string_view json, std::string &canonical,
                              std::string &error) {
  try {
    // nlohmann's objects are std::maps: dump() sorts the keys.
    canonical = Json::parse(json).dump();
    return true;
  } catch (const Json::exception &e) {
    error = std::string("not valid JSON: ") + e.what();
    return false;
  }
}

static bool readFile(const std::string &path, std::string &text) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  text = buffer.str();
  return static_cast<bool>(in) || in.eof();
}

std::unique_ptr<Tokenizer> Tokenizer::load(const std::string &path, std::string &error) {
  std::string json, config;
  if (!readFile(path, json)) {
    error = "cannot read '" + path + "'";
    return nullptr;
  }
  size_t slash = path.find_last_of('/');
  std::string configPath =
      (slash == std::string::npos ? std::string() : path.substr(0, slash + 1)) +
      "tokenizer_config.json";
  if (std::ifstream(configPath).good() && !readFile(configPath, config)) {
    error = "cannot read '" + configPath + "'";
    return nullptr;
  }
  auto tokenizer = parse(json, config, error);
  if (!tokenizer)
    error = path + ": " + error;
  return tokenizer;
}

// lstrip/rstrip: an added token eats the whitespace beside it.
static void stripAroundAddedTokens(
    std::vector<std::string_view> &pieces,
    const std::unordered_map<std::string, AddedToken> &addedByText) {
  for (size_t i = 0; i < pieces.size(); ++i) {
    auto it = addedByText.find(std::string(pieces[i]));
    if (it == addedByText.end())
      continue;
    if (it->second.lstrip && i > 0)
      pieces[i - 1] = trimEnd(pieces[i - 1]);
    if (it->second.rstrip && i + 1 < pieces.size())
      pieces[i + 1] = trimStart(pieces[i + 1]);
  }
}

void Tokenizer::Impl::encodeSection(std::string_view section, size_t index,
                                    std::vector<int32_t> &ids) const {
  std::string normalized = normalizer ? normalizer->normalize(section) : std::string(section);
  if (normalized.empty())
    return;
  std::vector<std::string_view> pieces;
  if (normalizedSplitter.empty())
    pieces.push_back(normalized);
  else
    pieces = normalizedSplitter.split(normalized);
  stripAroundAddedTokens(pieces, addedByText);
  std::vector<std::string> words;
  for (std::string_view piece : pieces) {
    if (piece.empty())
      continue;
    if (auto it = addedByText.find(std::string(piece)); it != addedByText.end()) {
      ids.push_back(it->second.id);
      continue;
    }
    words.assign(1, std::string(piece));
    if (preTokenizer)
      preTokenizer->splitAll(words, index);
    model->encode(words, ids);
  }
}

std::vector<int32_t> Tokenizer::encode(std::string_view input, bool addSpecialTokens) const {
  std::string text = toValidUtf8(input);
  std::vector<std::string_view> sections = impl->unnormalizedSplitter.split(text);
  stripAroundAddedTokens(sections, impl->addedByText);
  std::vector<int32_t> ids;
  for (size_t i = 0; i < sections.size(); ++i) {
    if (sections[i].empty())
      continue;
    if (auto it = impl->addedByText.find(std::string(sections[i]));
        it != impl->addedByText.end()) {
      ids.push_back(it->second.id);
      continue;
    }
    impl->encodeSection(sections[i], i, ids);
  }
  if (addSpecialTokens) {
    for (const std::vector<int32_t> &items : impl->templates) {
      std::vector<int32_t> wrapped;
      for (int32_t item : items) {
        if (item >= 0)
          wrapped.push_back(item);
        else
          wrapped.insert(wrapped.end(), ids.begin(), ids.end());
      }
      ids = std::move(wrapped);
    }
  }
  return ids;
}

static void replaceAll(std::string &text, std::string_view from, std::string_view to) {
  if (from.empty())
    return;
  std::string out;
  size_t last = 0;
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, last)) {
    out.append(text, last, at - last);
    out.append(to);
    last = at + from.size();
  }
  out.append(text, last);
  text = std::move(out);
}

bool Tokenizer::decode(const std::vector<int32_t> &ids, bool skipSpecialTokens,
                       std::string &text, std::string &error) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    const std::string *content = impl->model->tokenOf(id);
    if (!content) {
      error = "token id " + std::to_string(id) + " is outside the vocabulary (0.." +
              std::to_string(static_cast<int64_t>(impl->model->size()) - 1) + ")";
      return false;
    }
    if (skipSpecialTokens && impl->specialContents.count(*content))
      continue;
    tokens.push_back(*content);
  }
  text.clear();
  if (impl->decoder) {
    impl->decoder->decodeChain(tokens);
    for (const std::string &token : tokens)
      text += token;
  } else {
    for (size_t i = 0; i < tokens.size(); ++i)
      text += (i ? " " : "") + tokens[i];
  }
  if (impl->decoder && !impl->endOfWordSuffix.empty()) {
    replaceAll(text, impl->endOfWordSuffix, " ");
    if (skipSpecialTokens)
      text = std::string(trimEnd(trimStart(text)));
  }
  if (impl->cleanUpSpaces) {
    // transformers' clean_up_tokenization, in its order.
    static const std::pair<const char *, const char *> kCleanups[] = {
        {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
        {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
    for (const auto &[from, to] : kCleanups)
      replaceAll(text, from, to);
  }
  return true;
}

const std::string *Tokenizer::piece(int32_t id) const { return impl->model->tokenOf(id); }
int32_t Tokenizer::idOf(std::string_view content) const { return impl->model->idOf(content); }
size_t Tokenizer::vocabSize() const { return impl->model->size(); }
bool Tokenizer::spell(int32_t id, std::string &bytes) const {
  const std::string *content = impl->model->tokenOf(id);
  if (!content || impl->specialContents.count(*content))
    return false;
  bytes = *content;
  if (impl->decoder)
    impl->decoder->spell(bytes);
  return true;
}
bool Tokenizer::isSpecial(int32_t id) const {
  const std::string *content = impl->model->tokenOf(id);
  return content && impl->specialContents.count(*content);
}
