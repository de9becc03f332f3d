//===- BPE.cpp - the byte-pair-encoding model of tokenizer.json -----------===//

#include "BPE.h"
#include "Text.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <queue>

using namespace specrt::tok;

static constexpr uint32_t kNoSymbol = UINT32_MAX;
static constexpr size_t kMaxCachedWordBytes = 256;
static constexpr size_t kMaxCacheEntries = 1 << 16;

BPEModel::BPEModel(const Json &model, const std::string &path) {
  auto type = model.find("type");
  if (type != model.end() && !(type->is_string() && *type == "BPE"))
    throw LoadError(path + ".type", "the model '" + type->dump() +
                                        "' is not supported (BPE is)");
  if (auto dropout = model.find("dropout"); dropout != model.end() && !dropout->is_null())
    throw LoadError(path + ".dropout", "BPE dropout is not supported");
  if (auto prefix = model.find("continuing_subword_prefix");
      prefix != model.end() && !prefix->is_null() &&
      !(prefix->is_string() && prefix->get<std::string>().empty()))
    throw LoadError(path + ".continuing_subword_prefix", "a continuing-subword prefix is not supported");

  auto vocab = model.find("vocab");
  if (vocab == model.end() || !vocab->is_object())
    throw LoadError(path + ".vocab", "expected an object of token: id");
  for (auto it = vocab->begin(); it != vocab->end(); ++it) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > INT32_MAX)
      throw LoadError(path + ".vocab[\"" + it.key() + "\"]", "expected a token id");
    addToken(it.key(), static_cast<int32_t>(it->get<int64_t>()));
  }

  fuseUnk = boolOr(model, "fuse_unk", false, path);
  byteFallback = boolOr(model, "byte_fallback", false, path);
  ignoreMerges = boolOr(model, "ignore_merges", false, path);
  unkToken = stringOr(model, "unk_token", "", path);
  if (!unkToken.empty()) {
    unkId = idOf(unkToken);
    if (unkId < 0)
      throw LoadError(path + ".unk_token", "'" + unkToken + "' is not in the vocabulary");
  }
  wordSuffix = stringOr(model, "end_of_word_suffix", "", path);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    byteTokens[b] = idOf(name);
  }

  // Symbols: the vocabulary first, so that a symbol's token is known.
  for (const auto &[content, id] : tokenToId) {
    symbols.emplace(content, static_cast<uint32_t>(symbolToken.size()));
    symbolToken.push_back(id);
  }
  auto intern = [&](const std::string &text) {
    auto [it, inserted] = symbols.emplace(text, static_cast<uint32_t>(symbolToken.size()));
    if (inserted)
      symbolToken.push_back(-1);
    return it->second;
  };
  auto list = model.find("merges");
  if (list == model.end() || !list->is_array())
    throw LoadError(path + ".merges", "expected an array");
  merges.reserve(list->size());
  for (size_t rank = 0; rank < list->size(); ++rank) {
    const Json &merge = (*list)[rank];
    std::string left, right;
    if (merge.is_string()) {
      // "a b": as the reference, the first two space-separated parts.
      const std::string &text = merge.get_ref<const std::string &>();
      size_t space = text.find(' ');
      if (space == std::string::npos)
        throw LoadError(path + ".merges[" + std::to_string(rank) + "]", "expected \"left right\"");
      left = text.substr(0, space);
      size_t end = text.find(' ', space + 1);
      right = text.substr(space + 1, end == std::string::npos ? std::string::npos : end - space - 1);
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
      left = merge[0].get<std::string>();
      right = merge[1].get<std::string>();
    } else {
      throw LoadError(path + ".merges[" + std::to_string(rank) + "]", "expected \"left right\" or [left, right]");
    }
    uint32_t l = intern(left), r = intern(right), result = intern(left + right);
    // A repeated pair keeps its last rank, as the reference's Map does.
    merges[uint64_t(l) << 32 | r] = Merge{static_cast<uint32_t>(rank), result};
  }
}

void BPEModel::addToken(const std::string &content, int32_t id) {
  tokenToId[content] = id;
  if (static_cast<size_t>(id) >= idToToken.size())
    idToToken.resize(static_cast<size_t>(id) + 1);
  idToToken[static_cast<size_t>(id)] = content;
  if (auto it = symbols.find(content); it != symbols.end())
    symbolToken[it->second] = id;
}

int32_t BPEModel::idOf(std::string_view content) const {
  auto it = tokenToId.find(content);
  return it == tokenToId.end() ? -1 : it->second;
}

const std::string *BPEModel::tokenOf(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= idToToken.size())
    return nullptr;
  return &idToToken[static_cast<size_t>(id)];
}

uint32_t BPEModel::symbolOf(std::string_view text) const {
  auto it = symbols.find(text);
  return it == symbols.end() ? kNoSymbol : it->second;
}

void BPEModel::encode(const std::vector<std::string> &words,
                      std::vector<int32_t> &ids) const {
  size_t first = ids.size();
  for (const std::string &word : words) {
    if (word.empty())
      continue;
    if (ignoreMerges) {
      if (int32_t id = idOf(word); id >= 0) {
        ids.push_back(id);
        continue;
      }
    }
    if (word.size() < kMaxCachedWordBytes) {
      std::lock_guard<std::mutex> lock(cacheMutex);
      if (auto it = cache.find(word); it != cache.end()) {
        ids.insert(ids.end(), it->second.begin(), it->second.end());
        continue;
      }
    }
    size_t start = ids.size();
    encodeWord(word, ids);
    if (word.size() < kMaxCachedWordBytes) {
      std::lock_guard<std::mutex> lock(cacheMutex);
      if (cache.size() >= kMaxCacheEntries)
        cache.clear();
      cache.emplace(word, std::vector<int32_t>(ids.begin() + start, ids.end()));
    }
  }
  if (fuseUnk && unkId >= 0) {
    size_t out = first;
    for (size_t i = first; i < ids.size(); ++i)
      if (!(ids[i] == unkId && out > first && ids[out - 1] == unkId))
        ids[out++] = ids[i];
    ids.resize(out);
  }
}

void BPEModel::encodeWord(const std::string &word, std::vector<int32_t> &ids) const {
  // One node per code point; a merged node spans the bytes of both.
  struct Node {
    uint32_t symbol;
    uint32_t begin, length;
    int prev, next;
  };
  std::vector<Node> nodes;
  for (size_t i = 0; i < word.size();) {
    size_t begin = i;
    nextCodePoint(word, i);
    int index = static_cast<int>(nodes.size());
    nodes.push_back(Node{kNoSymbol, static_cast<uint32_t>(begin),
                         static_cast<uint32_t>(i - begin), index - 1, index + 1});
  }
  nodes.back().next = -1;
  for (size_t k = 0; k < nodes.size(); ++k) {
    std::string_view text(word.data() + nodes[k].begin, nodes[k].length);
    if (k + 1 == nodes.size() && !wordSuffix.empty())
      nodes[k].symbol = symbolOf(std::string(text) + wordSuffix);
    else
      nodes[k].symbol = symbolOf(text);
  }

  struct Candidate {
    uint32_t rank;
    int node;
    uint32_t left, right, result;
    bool operator>(const Candidate &o) const {
      return rank != o.rank ? rank > o.rank : node > o.node;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto consider = [&](int k) {
    int next = nodes[k].next;
    if (next < 0 || nodes[k].symbol == kNoSymbol || nodes[next].symbol == kNoSymbol)
      return;
    auto it = merges.find(uint64_t(nodes[k].symbol) << 32 | nodes[next].symbol);
    if (it != merges.end())
      queue.push(Candidate{it->second.rank, k, nodes[k].symbol, nodes[next].symbol,
                           it->second.result});
  };
  for (size_t k = 0; k + 1 < nodes.size(); ++k)
    consider(static_cast<int>(k));
  while (!queue.empty()) {
    Candidate c = queue.top();
    queue.pop();
    Node &node = nodes[c.node];
    if (node.symbol != c.left || node.next < 0 || nodes[node.next].symbol != c.right)
      continue; // stale: one side has merged since
    Node &right = nodes[node.next];
    node.symbol = c.result;
    node.length += right.length;
    node.next = right.next;
    if (right.next >= 0)
      nodes[right.next].prev = c.node;
    right.symbol = kNoSymbol;
    if (node.prev >= 0)
      consider(node.prev);
    consider(c.node);
  }

  for (int k = 0; k >= 0; k = nodes[k].next)
    appendPiece(nodes[k].symbol,
                std::string_view(word.data() + nodes[k].begin, nodes[k].length),
                ids);
}

void BPEModel::appendPiece(uint32_t symbol, std::string_view text,
                           std::vector<int32_t> &ids) const {
  if (symbol != kNoSymbol && symbolToken[symbol] >= 0) {
    ids.push_back(symbolToken[symbol]);
    return;
  }
  if (symbol == kNoSymbol) { // a character no merge or token has, but an added token
    if (int32_t id = idOf(text); id >= 0) {
      ids.push_back(id);
      return;
    }
  }
  if (byteFallback) {
    bool all = true;
    for (char b : text)
      all &= byteTokens[static_cast<unsigned char>(b)] >= 0;
    if (all) {
      for (char b : text)
        ids.push_back(byteTokens[static_cast<unsigned char>(b)]);
      return;
    }
  }
  if (unkId >= 0)
    ids.push_back(unkId);
}
