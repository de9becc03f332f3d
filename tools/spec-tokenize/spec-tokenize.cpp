//===- spec-tokenize.cpp - encode and decode with a tokenizer.json --------===//
//
// spec-tokenize TOKENIZER.json --text TEXT | --file F... | --decode IDS
//
//===----------------------------------------------------------------------===//

#include "specrt/Tokenizer.h"

#include <nlohmann/json.hpp>

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
} // namespace

int main(int argc, char **argv) {
  std::string tokenizerPath, decodeIds;
  std::vector<std::pair<std::string, std::string>> inputs; // name, text
  bool json = false, idsOnly = false, roundTrip = false, addSpecial = false,
       skipSpecial = false, decoding = false;
  long benchmark = 0;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](std::string &out) {
      if (i + 1 >= argc)
        return false;
      out = argv[++i];
      return true;
    };
    std::string v;
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (arg == "--text") {
      if (!value(v))
        return usageError("option --text needs a value");
      inputs.emplace_back("<text>", v);
    } else if (arg == "--file") {
      if (!value(v))
        return usageError("option --file needs a value");
      std::string text;
      if (!readFile(v, text))
        return error("cannot read '" + v + "'");
      inputs.emplace_back(v, std::move(text));
    } else if (arg == "--decode") {
      if (!value(decodeIds))
        return usageError("option --decode needs a value");
      decoding = true;
    } else if (arg == "--benchmark") {
      if (!value(v))
        return usageError("option --benchmark needs a value");
      char *end = nullptr;
      benchmark = std::strtol(v.c_str(), &end, 10);
      if (*end || benchmark <= 0)
        return usageError("--benchmark: '" + v + "' is not a positive count");
    } else if (arg == "--json") {
      json = true;
    } else if (arg == "--ids") {
      idsOnly = true;
    } else if (arg == "--round-trip") {
      roundTrip = true;
    } else if (arg == "--add-special") {
      addSpecial = true;
    } else if (arg == "--skip-special") {
      skipSpecial = true;
    } else if (!arg.empty() && arg[0] == '-') {
      return usageError("unknown option '" + arg + "'");
    } else if (tokenizerPath.empty()) {
      tokenizerPath = arg;
    } else {
      return usageError("unexpected argument '" + arg + "'");
    }
  }
  if (tokenizerPath.empty())
    return usageError("give a tokenizer.json");
  if (decoding == !inputs.empty())
    return usageError("give one of --text/--file (to encode) and --decode");

  std::string message;
  std::unique_ptr<specrt::Tokenizer> tokenizer = specrt::Tokenizer::load(tokenizerPath, message);
  if (!tokenizer)
    return error(message);

  if (decoding) {
    std::vector<int32_t> ids;
    std::string item;
    std::istringstream stream(decodeIds);
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
    std::string text;
    if (!tokenizer->decode(ids, skipSpecial, text, message))
      return error(message);
    if (json)
      std::cout << dump({{"text", text}}) << "\n";
    else
      std::cout << text << "\n";
    return 0;
  }

  if (benchmark) {
    for (const auto &input : inputs) // warm-up: caches, page faults
      tokenizer->encode(input.second, addSpecial);
    size_t bytes = 0, tokens = 0;
    auto start = std::chrono::steady_clock::now();
    for (long round = 0; round < benchmark; ++round)
      for (const auto &input : inputs) {
        bytes += input.second.size();
        tokens += tokenizer->encode(input.second, addSpecial).size();
      }
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("encoded %zu bytes into %zu tokens in %.3f s: %.2f MB/s, %.0f tokens/s\n",
                bytes, tokens, seconds, bytes / seconds / 1e6, tokens / seconds);
    return 0;
  }

  for (const auto &[name, text] : inputs) {
    std::vector<int32_t> ids = tokenizer->encode(text, addSpecial);
    if (json) {
      nlohmann::json out;
      out["ids"] = ids;
      nlohmann::json pieces = nlohmann::json::array();
      for (int32_t id : ids)
        pieces.push_back(*tokenizer->piece(id));
      out["pieces"] = std::move(pieces);
      if (inputs.size() > 1)
        out["file"] = name;
      if (roundTrip) {
        std::string decoded;
        if (!tokenizer->decode(ids, false, decoded, message))
          return error(message);
        out["text"] = decoded;
      }
      std::cout << dump(out) << "\n";
    } else if (idsOnly) {
      std::cout << "[";
      for (size_t i = 0; i < ids.size(); ++i)
        std::cout << (i ? ", " : "") << ids[i];
      std::cout << "]\n";
    } else {
      for (int32_t id : ids)
        std::cout << id << " -> " << quoted(*tokenizer->piece(id)) << "\n";
    }
  }
  return 0;
}
