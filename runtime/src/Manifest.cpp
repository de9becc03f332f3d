//===- Manifest.cpp - read and check an artifact's manifest ---------------===//

#include "Manifest.h"
#include "Json.h"

#include "specrt/artifact_format.h"

#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace specrt;

namespace {
/// What is wrong with the manifest's tree of candidates, or "". Parents come
/// before their children, and no path is deeper than the proposals.
std::string checkTree(const Manifest &m) {
  if (m.treeParents.size() != m.treeRanks.size())
    return "has " + std::to_string(m.treeParents.size()) + " parents for " +
           std::to_string(m.treeRanks.size()) + " ranks";
  for (size_t node = 1; node <= m.treeParents.size(); ++node) {
    int64_t parent = m.treeParents[node - 1];
    if (parent < 0 || parent >= static_cast<int64_t>(node))
      return "has node " + std::to_string(node) + " under node " +
             std::to_string(parent) + "; parents come before their children";
    if (m.treeRanks[node - 1] < 0)
      return "has node " + std::to_string(node) + " of a negative rank";
    if (m.treeDepth(node) > m.proposals)
      return "has node " + std::to_string(node) + " deeper than the " +
             std::to_string(m.proposals) + " proposals";
  }
  return {};
}

/// The value at a dotted path, or null.
const JsonValue *at(const JsonValue &root, const std::string &path) {
  const JsonValue *value = &root;
  size_t start = 0;
  while (value) {
    size_t dot = path.find('.', start);
    value = value->get(path.substr(start, dot - start));
    if (dot == std::string::npos)
      break;
    start = dot + 1;
  }
  return value;
}

/// Reads typed fields of the manifest; the first problem is kept and names
/// the field's path ("decoder.proposals").
class FieldReader {
public:
  FieldReader(const JsonValue &root, std::string file)
      : root(root), file(std::move(file)) {}

  const JsonValue *find(const std::string &path, bool required = true) {
    const JsonValue *value = at(root, path);
    if (!value && required)
      problem(path, "is missing");
    return value;
  }

  std::string string(const std::string &path) {
    const JsonValue *v = find(path);
    if (v && v->kind != JsonValue::Kind::String)
      problem(path, "is not a string");
    return v && v->kind == JsonValue::Kind::String ? v->string : "";
  }

  /// An integer; `nullable` fields may be null (read as -1).
  int64_t integer(const std::string &path, bool nullable = false) {
    const JsonValue *v = find(path);
    if (!v)
      return 0;
    if (nullable && v->kind == JsonValue::Kind::Null)
      return -1;
    if (v->kind != JsonValue::Kind::Number || std::floor(v->number) != v->number ||
        std::fabs(v->number) > 9.0e15) {
      problem(path, "is not an integer");
      return 0;
    }
    return static_cast<int64_t>(v->number);
  }

  /// An optional array of integers (empty when absent).
  std::vector<int64_t> integers(const std::string &path) {
    std::vector<int64_t> values;
    const JsonValue *v = find(path, /*required=*/false);
    if (!v)
      return values;
    if (v->kind != JsonValue::Kind::Array) {
      problem(path, "is not an array");
      return values;
    }
    for (const JsonValue &entry : v->array) {
      if (entry.kind != JsonValue::Kind::Number ||
          std::floor(entry.number) != entry.number ||
          std::fabs(entry.number) > 9.0e15) {
        problem(path, "has an entry that is not an integer");
        return {};
      }
      values.push_back(static_cast<int64_t>(entry.number));
    }
    return values;
  }

  double number(const std::string &path, double fallback) {
    const JsonValue *v = find(path, /*required=*/false);
    if (!v)
      return fallback;
    if (v->kind != JsonValue::Kind::Number) {
      problem(path, "is not a number");
      return fallback;
    }
    return v->number;
  }

  void problem(const std::string &path, const std::string &what) {
    if (error.empty())
      error = file + ": field '" + path + "' " + what;
  }

  std::string error;

private:
  const JsonValue &root;
  std::string file;
};

/// A manifest is about a kilobyte; reading is capped so that a path to a
/// device or a huge file cannot allocate without bound.
constexpr size_t kMaxManifestBytes = 1 << 20;

/// Reads a regular file of at most kMaxManifestBytes; on failure returns
/// false with `why` set.
bool readText(const std::string &path, std::string &text, std::string &why) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    why = std::strerror(errno);
    return false;
  }
  struct stat st;
  bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (!ok)
    why = "not a regular file";
  else if (static_cast<uint64_t>(st.st_size) > kMaxManifestBytes)
    why = std::to_string(st.st_size) + " bytes, more than a manifest's " +
          std::to_string(kMaxManifestBytes);
  ok = ok && why.empty();
  char buffer[65536];
  while (ok) {
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      why = std::strerror(errno);
      ok = false;
    } else if (n == 0) {
      break;
    } else if (text.size() + n > kMaxManifestBytes) {
      why = "it grew past " + std::to_string(kMaxManifestBytes) + " bytes";
      ok = false;
    } else {
      text.append(buffer, n);
    }
  }
  ::close(fd);
  return ok;
}

/// A value as a message shows it.
std::string show(const JsonValue &value) {
  switch (value.kind) {
  case JsonValue::Kind::Null: return "null";
  case JsonValue::Kind::Bool: return value.boolean ? "true" : "false";
  case JsonValue::Kind::Number: {
    char text[32];
    std::snprintf(text, sizeof(text), "%.17g", value.number);
    return text;
  }
  case JsonValue::Kind::String: return "'" + value.string + "'";
  case JsonValue::Kind::Array: {
    std::string text = "[";
    for (const JsonValue &element : value.array)
      text += (text.size() > 1 ? ", " : "") + show(element);
    return text + "]";
  }
  case JsonValue::Kind::Object: return "an object";
  }
  return "?";
}

/// The first path under `path` where `facts` and `manifest` differ (every
/// member of `facts` must be in `manifest`); empty when none.
std::string firstDifference(const JsonValue &facts, const JsonValue *manifest,
                            const std::string &path) {
  if (!manifest || manifest->kind != facts.kind)
    return path;
  switch (facts.kind) {
  case JsonValue::Kind::Object:
    for (const auto &[key, value] : facts.object) {
      std::string difference = firstDifference(
          value, manifest->get(key), path.empty() ? key : path + "." + key);
      if (!difference.empty())
        return difference;
    }
    return "";
  case JsonValue::Kind::Array:
    if (facts.array.size() != manifest->array.size())
      return path;
    for (size_t i = 0; i < facts.array.size(); ++i)
      if (!firstDifference(facts.array[i], &manifest->array[i], path).empty())
        return path;
    return "";
  case JsonValue::Kind::Null: return "";
  case JsonValue::Kind::Bool:
    return facts.boolean == manifest->boolean ? "" : path;
  case JsonValue::Kind::Number:
    return facts.number == manifest->number ? "" : path;
  case JsonValue::Kind::String:
    return facts.string == manifest->string ? "" : path;
  }
  return path;
}

} // namespace

specrt_status specrt::readManifest(const std::string &directory,
                                   Manifest &manifest, std::string &error) {
  std::string path = directory + "/" SPECRT_MANIFEST_FILE;
  std::string text, why;
  if (!readText(path, text, why)) {
    error = "'" + directory +
            "' is not a Specula artifact: cannot read " SPECRT_MANIFEST_FILE
            " (" + why + "; compile one with specc -o model.spec)";
    return SPECRT_ERROR_IO;
  }
  return parseManifest(text, path, manifest, error);
}

specrt_status specrt::parseManifest(const std::string &text,
                                    const std::string &path,
                                    Manifest &manifest, std::string &error) {
  JsonValue root;
  std::string jsonError;
  if (!parseJson(text, root, jsonError)) {
    error = path + " is not valid JSON: " + jsonError;
    return SPECRT_ERROR_FORMAT;
  }
  FieldReader fields(root, path);
  if (root.kind != JsonValue::Kind::Object ||
      fields.string("format") != SPECRT_ARTIFACT_FORMAT) {
    error = path + " is not a Specula manifest (no \"format\": \"" +
            SPECRT_ARTIFACT_FORMAT + "\")";
    return SPECRT_ERROR_FORMAT;
  }
  int64_t version = fields.integer("format_version");
  if (fields.error.empty() && version != SPECRT_ARTIFACT_FORMAT_VERSION) {
    error = path + ": artifact format version " + std::to_string(version) +
            "; this runtime reads version " +
            std::to_string(SPECRT_ARTIFACT_FORMAT_VERSION) +
            " (recompile the model with this release's specc)";
    return SPECRT_ERROR_VERSION;
  }
  std::string abi = fields.string("abi");
  if (fields.error.empty() && abi != SPECRT_ARTIFACT_ABI) {
    error = path + ": entry-point ABI '" + abi + "'; this runtime calls '" +
            SPECRT_ARTIFACT_ABI + "'";
    return SPECRT_ERROR_VERSION;
  }

  Manifest &m = manifest;
  m.producer = fields.string("producer");
  m.device = fields.string("target.device");
  m.triple = fields.string("target.triple");
  m.cpu = fields.string("target.cpu");
  if (const JsonValue *features = fields.find("target.features", false)) {
    if (features->kind != JsonValue::Kind::Array)
      fields.problem("target.features", "is not an array");
    else
      for (const JsonValue &feature : features->array) {
        if (feature.kind != JsonValue::Kind::String)
          fields.problem("target.features", "has an entry that is not a string");
        else
          m.cpuFeatures.push_back(feature.string);
      }
  }
  if (m.device == "cuda") {
    m.chip = fields.string("target.chip");
    m.ptxIsa = fields.string("target.ptx_isa");
  } else if (fields.error.empty() && m.device != "cpu") {
    fields.problem("target.device", "is '" + m.device +
                                        "'; this runtime runs cpu and cuda");
  }
  m.generateEntry = fields.string("entry_points.generate");
  m.targetOnlyEntry = fields.string("entry_points.target_only");
  m.tokenizer = fields.string("model.tokenizer.kind");
  std::vector<std::pair<const char *, ArtifactFile *>> files = {
      {"library", &m.library}, {"weights", &m.weights}};
  if (fields.error.empty() && m.tokenizer == "tokenizer.json") {
    files.emplace_back("tokenizer", &m.tokenizerFile);
    if (fields.find("files.tokenizer_config", false))
      files.emplace_back("tokenizer_config", &m.tokenizerConfigFile);
  }
  for (auto [key, file] : files) {
    std::string prefix = std::string("files.") + key;
    file->name = fields.string(prefix + ".file");
    int64_t size = fields.integer(prefix + ".size");
    file->size = size < 0 ? 0 : static_cast<uint64_t>(size);
    file->checksum = fields.string(prefix + ".checksum");
    if (file->name.find('/') != std::string::npos || file->name.empty() ||
        file->name == "." || file->name == "..")
      fields.problem(prefix + ".file", "must name a file in the artifact");
  }
  m.vocabSize = fields.integer("model.vocab_size");
  m.bosTokenId = fields.integer("model.bos_token_id", /*nullable=*/true);
  m.eosTokenId = fields.integer("model.eos_token_id", /*nullable=*/true);
  m.padTokenId = fields.integer("model.pad_token_id", /*nullable=*/true);
  if (const JsonValue *stops = fields.find("model.stop_token_ids", false)) {
    if (stops->kind != JsonValue::Kind::Array)
      fields.problem("model.stop_token_ids", "is not an array");
    else
      for (const JsonValue &id : stops->array) {
        if (id.kind != JsonValue::Kind::Number || id.number < 0 ||
            id.number != static_cast<double>(static_cast<int64_t>(id.number)) ||
            id.number >= static_cast<double>(m.vocabSize))
          fields.problem("model.stop_token_ids", "has an entry that is not a token id");
        else
          m.stopTokenIds.push_back(static_cast<int64_t>(id.number));
      }
  }
  m.proposer = fields.string("decoder.proposer");
  m.proposals = fields.integer("decoder.proposals");
  m.verify = fields.string("decoder.verify");
  m.contextCapacity = fields.integer("decoder.context_capacity");
  m.temperature = fields.number("decoder.temperature", 0.0);
  m.topK = static_cast<int64_t>(fields.number("decoder.top_k", 0));
  m.topP = fields.number("decoder.top_p", 1.0);
  m.treeParents = fields.integers("decoder.tree.parents");
  m.treeRanks = fields.integers("decoder.tree.ranks");
  if (fields.error.empty()) {
    if (m.vocabSize <= 0)
      fields.problem("model.vocab_size", "must be positive");
    else if (m.contextCapacity < 2)
      fields.problem("decoder.context_capacity", "must be at least 2");
    else if (m.proposals < 1)
      fields.problem("decoder.proposals", "must be at least 1");
    else if (m.verify != "greedy" && m.verify != "rejection-sampling")
      fields.problem("decoder.verify",
                     "is '" + m.verify +
                         "'; expected 'greedy' or 'rejection-sampling'");
    else if (std::string problem = checkTree(m); !problem.empty())
      fields.problem("decoder.tree", problem);
    else if (m.tokenizer != "bytes" && m.tokenizer != "tokenizer.json")
      fields.problem("model.tokenizer.kind",
                     "is '" + m.tokenizer + "'; expected 'bytes' or 'tokenizer.json'");
  }
  if (!fields.error.empty()) {
    error = fields.error;
    return SPECRT_ERROR_FORMAT;
  }
  m.document = std::move(root);
  return SPECRT_OK;
}

specrt_status specrt::checkLibraryFacts(const Manifest &manifest,
                                        const char *text,
                                        const std::string &library,
                                        std::string &error) {
  if (!text) {
    error = "'" + library + "' states no facts (" SPECRT_FACTS_SYMBOL
            "): it was not compiled by this release's specc";
    return SPECRT_ERROR_FORMAT;
  }
  size_t length = strnlen(text, SPECRT_FACTS_MAX_BYTES);
  JsonValue facts;
  std::string jsonError;
  if (length == SPECRT_FACTS_MAX_BYTES) {
    error = "'" + library + "': " SPECRT_FACTS_SYMBOL " is longer than " +
            std::to_string(SPECRT_FACTS_MAX_BYTES) + " bytes";
    return SPECRT_ERROR_FORMAT;
  }
  if (!parseJson(std::string(text, length), facts, jsonError) ||
      facts.kind != JsonValue::Kind::Object) {
    error = "'" + library + "': " SPECRT_FACTS_SYMBOL " is not a JSON object" +
            (jsonError.empty() ? "" : ": " + jsonError);
    return SPECRT_ERROR_FORMAT;
  }
  std::string path = firstDifference(facts, &manifest.document, "");
  if (path.empty())
    return SPECRT_OK;
  const JsonValue *said = at(manifest.document, path);
  error = "the manifest disagrees with the compiled code in '" + library +
          "': " + path + " is " + (said ? show(*said) : "missing") +
          " in the manifest, " + show(*at(facts, path)) +
          " in the code (was the manifest edited?)";
  return SPECRT_ERROR_CORRUPT;
}

specrt_status specrt::checkArtifactFile(const std::string &path,
                                        const void *data, size_t size,
                                        const ArtifactFile &expected,
                                        bool checksum, std::string &error) {
  if (size != expected.size) {
    error = "'" + path + "' has " + std::to_string(size) +
            " bytes; the manifest says " + std::to_string(expected.size) +
            (size < expected.size ? " (truncated?)" : "");
    return SPECRT_ERROR_CORRUPT;
  }
  if (!checksum)
    return SPECRT_OK;
  char actual[32];
  std::snprintf(actual, sizeof(actual), "fnv1a64:%016" PRIx64,
                specrt_fnv1a64(data, size, SPECRT_FNV1A64_INIT));
  if (expected.checksum != actual) {
    error = "'" + path + "' is corrupt: checksum " + actual +
            ", the manifest says " + expected.checksum;
    return SPECRT_ERROR_CORRUPT;
  }
  return SPECRT_OK;
}
