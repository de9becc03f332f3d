//===- spec-tokenize.cpp - encode and decode with a tokenizer.json --------===//
//
// spec-tokenize TOKENIZER.json --text TEXT | --file F... | --decode IDS
//
//===----------------------------------------------------------------------===//

#include "specrt/Tokenizer.h"
#include "specrt/VocabularyBridge.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {
const char kUsage[] =
    "usage: spec-tokenize TOKENIZER.json (--text TEXT | --file F... | --decode IDS) [options]\n"
    "\n"
    "Encodes text into token ids (and pieces), or decodes ids into text, with a\n"
    "Hugging Face tokenizer.json (tokenizer_config.json beside it is read too).\n"
    "\n"
    "  --text TEXT       encode TEXT\n"
    "  --file F          encode the contents of F (repeat for several files;\n"
    "                    one result per file)\n"
    "  --decode IDS      decode the ids IDS (separated by commas or spaces)\n"
    "  --json            print JSON: {\"ids\": [...], \"pieces\": [...]} per input\n"
    "                    (with --decode: {\"text\": ...}); one object per line\n"
    "  --ids             print only the ids, as a list\n"
    "  --round-trip      with --json: also decode the ids (\"text\")\n"
    "  --add-special     let the post-processor add its special tokens (BOS...)\n"
    "  --skip-special    with --decode: leave special tokens out of the text\n"
    "  --bridge DRAFT    the tokens of the tokenizer.json DRAFT spelled like one\n"
    "                    of TOKENIZER.json's; with --text/--file, how many of\n"
    "                    each input's DRAFT tokens map and whether its bytes\n"
    "                    come back from both tokenizations\n"
    "  --benchmark N     encode the inputs once untimed, then N times timed;\n"
    "                    print the throughput\n"
    "  --help            this text\n";

int usageError(const std::string &message) {
  std::fprintf(stderr, "spec-tokenize: error: %s\n(see spec-tokenize --help)\n",
               message.c_str());
  return 2;
}

int error(const std::string &message) {
  std::fprintf(stderr, "spec-tokenize: error: %s\n", message.c_str());
  return 1;
}

bool readFile(const std::string &path, std::string &text) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  text = buffer.str();
  return true;
}

std::string dump(const nlohmann::json &json) {
  return json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// A piece as text a person can read: byte-level pieces are shown as they are
// spelled in the vocabulary, control characters escaped.
std::string quoted(const std::string &piece) {
  std::string out = "'";
  for (unsigned char c : piece) {
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\r')
      out += "\\r";
    else if (c < 0x20 || c == 0x7F) {
      char buffer[8];
      std::snprintf(buffer, sizeof(buffer), "\\x%02x", c);
      out += buffer;
    } else if (c == '\'')
      out += "\\'";
    else
      out += static_cast<char>(c);
  }
  return out + "'";
}

struct Options {
  std::string tokenizerPath, decodeIds, bridgePath;
  std::vector<std::pair<std::string, std::string>> inputs; // name, text
  bool json = false, idsOnly = false, roundTrip = false, addSpecial = false,
       skipSpecial = false, decoding = false;
  long benchmark = 0;
};

/// An option with a value into `o`: -1, or the exit status of its error.
int applyValueOption(const std::string &arg, const std::string &v,
                     Options &o) {
  if (arg == "--text") {
    o.inputs.emplace_back("<text>", v);
  } else if (arg == "--file") {
    std::string text;
    if (!readFile(v, text))
      return error("cannot read '" + v + "'");
    o.inputs.emplace_back(v, std::move(text));
  } else if (arg == "--bridge") {
    o.bridgePath = v;
  } else if (arg == "--decode") {
    o.decodeIds = v;
    o.decoding = true;
  } else {
    char *end = nullptr;
    o.benchmark = std::strtol(v.c_str(), &end, 10);
    if (*end || o.benchmark <= 0)
      return usageError("--benchmark: '" + v + "' is not a positive count");
  }
  return -1;
}

/// The command line into `o`: -1, or the exit status (0 after --help).
int parseOptions(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (arg == "--text" || arg == "--file" || arg == "--decode" ||
               arg == "--benchmark" || arg == "--bridge") {
      if (i + 1 >= argc)
        return usageError("option " + arg + " needs a value");
      if (int rc = applyValueOption(arg, argv[++i], o); rc >= 0)
        return rc;
    } else if (arg == "--json") {
      o.json = true;
    } else if (arg == "--ids") {
      o.idsOnly = true;
    } else if (arg == "--round-trip") {
      o.roundTrip = true;
    } else if (arg == "--add-special") {
      o.addSpecial = true;
    } else if (arg == "--skip-special") {
      o.skipSpecial = true;
    } else if (!arg.empty() && arg[0] == '-') {
      return usageError("unknown option '" + arg + "'");
    } else if (o.tokenizerPath.empty()) {
      o.tokenizerPath = arg;
    } else {
      return usageError("unexpected argument '" + arg + "'");
    }
  }
  if (o.tokenizerPath.empty())
    return usageError("give a tokenizer.json");
  if (o.decoding == !o.inputs.empty() && o.bridgePath.empty())
    return usageError("give one of --text/--file (to encode) and --decode");
  return -1;
}

int decode(const specrt::Tokenizer &tokenizer, const Options &o) {
  std::vector<int32_t> ids;
  std::string item;
  std::istringstream stream(o.decodeIds);
  while (stream >> item) {
    std::stringstream parts(item);
    std::string part;
    while (std::getline(parts, part, ',')) {
      if (part.empty())
        continue;
      char *end = nullptr;
      long long id = std::strtoll(part.c_str(), &end, 10);
      if (*end || id < 0 || id > INT32_MAX)
        return usageError("--decode: '" + part + "' is not a token id");
      ids.push_back(static_cast<int32_t>(id));
    }
  }
  std::string text, message;
  if (!tokenizer.decode(ids, o.skipSpecial, text, message))
    return error(message);
  if (o.json)
    std::cout << dump({{"text", text}}) << "\n";
  else
    std::cout << text << "\n";
  return 0;
}

int benchmark(const specrt::Tokenizer &tokenizer, const Options &o) {
  for (const auto &input : o.inputs) // warm-up: caches, page faults
    tokenizer.encode(input.second, o.addSpecial);
  size_t bytes = 0, tokens = 0;
  auto start = std::chrono::steady_clock::now();
  for (long round = 0; round < o.benchmark; ++round)
    for (const auto &input : o.inputs) {
      bytes += input.second.size();
      tokens += tokenizer.encode(input.second, o.addSpecial).size();
    }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("encoded %zu bytes into %zu tokens in %.3f s: %.2f MB/s, %.0f tokens/s\n",
              bytes, tokens, seconds, bytes / seconds / 1e6, tokens / seconds);
  return 0;
}

int encode(const specrt::Tokenizer &tokenizer, const Options &o) {
  for (const auto &[name, text] : o.inputs) {
    std::vector<int32_t> ids = tokenizer.encode(text, o.addSpecial);
    if (o.json) {
      nlohmann::json out;
      out["ids"] = ids;
      nlohmann::json pieces = nlohmann::json::array();
      for (int32_t id : ids)
        pieces.push_back(*tokenizer.piece(id));
      out["pieces"] = std::move(pieces);
      if (o.inputs.size() > 1)
        out["file"] = name;
      if (o.roundTrip) {
        std::string decoded, message;
        if (!tokenizer.decode(ids, false, decoded, message))
          return error(message);
        out["text"] = decoded;
      }
      std::cout << dump(out) << "\n";
    } else if (o.idsOnly) {
      std::cout << "[";
      for (size_t i = 0; i < ids.size(); ++i)
        std::cout << (i ? ", " : "") << ids[i];
      std::cout << "]\n";
    } else {
      for (int32_t id : ids)
        std::cout << id << " -> " << quoted(*tokenizer.piece(id)) << "\n";
    }
  }
  return 0;
}
/// The bytes `ids` spell, or false at a token that spells none.
bool spellAll(const specrt::Tokenizer &tokenizer, const std::vector<int32_t> &ids,
              std::string &bytes) {
  bytes.clear();
  std::string piece;
  for (int32_t id : ids) {
    if (!tokenizer.spell(id, piece))
      return false;
    bytes += piece;
  }
  return true;
}

int bridge(const specrt::Tokenizer &target, const Options &o) {
  std::string message;
  std::unique_ptr<specrt::Tokenizer> draft = specrt::Tokenizer::load(o.bridgePath, message);
  if (!draft)
    return error(message);
  specrt::Vocabulary draftVocabulary = specrt::Vocabulary::of(*draft, 0, -1, -1);
  specrt::VocabularyBridge map = specrt::VocabularyBridge::build(
      draftVocabulary, specrt::Vocabulary::of(target, 0, -1, -1));
  std::printf("%zu of %zu draft tokens map to the target\n", map.mapped, map.toTarget.size());
  int status = 0;
  for (const auto &[name, text] : o.inputs) {
    std::vector<int32_t> ids = draft->encode(text);
    size_t mapped = std::count_if(ids.begin(), ids.end(),
                                  [&](int32_t id) { return map.toTarget[id] >= 0; });
    std::string viaDraft, viaTarget;
    bool same = spellAll(*draft, ids, viaDraft) && viaDraft == text &&
                spellAll(target, target.encode(text), viaTarget) && viaTarget == text;
    std::printf("%s: %zu of %zu draft tokens map; %s\n", name.c_str(), mapped, ids.size(),
                same ? "both spell the text back" : "the text does not come back");
    status |= !same;
  }
  return status;
}
} // namespace

int main(int argc, char **argv) {
  Options o;
  if (int rc = parseOptions(argc, argv, o); rc >= 0)
    return rc;
  std::string message;
  std::unique_ptr<specrt::Tokenizer> tokenizer =
      specrt::Tokenizer::load(o.tokenizerPath, message);
  if (!tokenizer)
    return error(message);
  if (!o.bridgePath.empty())
    return bridge(*tokenizer, o);
  if (o.decoding)
    return decode(*tokenizer, o);
  return o.benchmark ? benchmark(*tokenizer, o) : encode(*tokenizer, o);
}
