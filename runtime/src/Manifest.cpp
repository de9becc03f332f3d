//===- Manifest.cpp - read and check an artifact's manifest ---------------===//

#include "Manifest.h"

#include "specrt/artifact_format.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace specrt;
using nlohmann::json;

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

/// The member `key` of an object, or null when absent or not an object.
const json *member(const json &object, const std::string &key) {
  if (!object.is_object())
    return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

/// The value at a dotted path, or null.
const json *at(const json &root, const std::string &path) {
  const json *value = &root;
  size_t start = 0;
  while (value) {
    size_t dot = path.find('.', start);
    value = member(*value, path.substr(start, dot - start));
    if (dot == std::string::npos)
      break;
    start = dot + 1;
  }
  return value;
}

/// Whether `value` is a number with an integer value that a double holds
/// exactly (as the manifest's writer wrote it).
bool isInteger(const json &value) {
  constexpr int64_t kLimit = 9000000000000000LL;
  if (value.is_number_unsigned())
    return value.get<uint64_t>() <= static_cast<uint64_t>(kLimit);
  if (value.is_number_integer())
    return value.get<int64_t>() >= -kLimit && value.get<int64_t>() <= kLimit;
  if (!value.is_number_float())
    return false;
  double number = value.get<double>();
  return std::floor(number) == number &&
         std::fabs(number) <= static_cast<double>(kLimit);
}

int64_t integerOf(const json &value) {
  return value.is_number_float() ? static_cast<int64_t>(value.get<double>())
                                 : value.get<int64_t>();
}

/// Reads typed fields of the manifest; the first problem is kept and names
/// the field's path ("decoder.proposals").
class FieldReader {
public:
  FieldReader(const json &root, std::string file)
      : root(root), file(std::move(file)) {}

  const json *find(const std::string &path, bool required = true) {
    const json *value = at(root, path);
    if (!value && required)
      problem(path, "is missing");
    return value;
  }

  std::string string(const std::string &path) {
    const json *v = find(path);
    if (v && !v->is_string())
      problem(path, "is not a string");
    return v && v->is_string() ? v->get<std::string>() : "";
  }

  /// An integer; `nullable` fields may be null (read as -1).
  int64_t integer(const std::string &path, bool nullable = false) {
    const json *v = find(path);
    if (!v)
      return 0;
    if (nullable && v->is_null())
      return -1;
    if (!isInteger(*v)) {
      problem(path, "is not an integer");
      return 0;
    }
    return integerOf(*v);
  }

  /// An optional array of integers (empty when absent).
  std::vector<int64_t> integers(const std::string &path) {
    std::vector<int64_t> values;
    const json *v = find(path, /*required=*/false);
    if (!v)
      return values;
    if (!v->is_array()) {
      problem(path, "is not an array");
      return values;
    }
    for (const json &entry : *v) {
      if (!isInteger(entry)) {
        problem(path, "has an entry that is not an integer");
        return {};
      }
      values.push_back(integerOf(entry));
    }
    return values;
  }

  double number(const std::string &path, double fallback) {
    const json *v = find(path, /*required=*/false);
    if (!v)
      return fallback;
    if (!v->is_number()) {
      problem(path, "is not a number");
      return fallback;
    }
    return v->get<double>();
  }

  void problem(const std::string &path, const std::string &what) {
    if (error.empty())
      error = file + ": field '" + path + "' " + what;
  }

  std::string error;

private:
  const json &root;
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
std::string show(const json &value) {
  switch (value.type()) {
  case json::value_t::string: return "'" + value.get<std::string>() + "'";
  case json::value_t::object: return "an object";
  case json::value_t::array: {
    std::string text = "[";
    for (const json &element : value)
      text += (text.size() > 1 ? ", " : "") + show(element);
    return text + "]";
  }
  case json::value_t::number_float: {
    char text[32];
    std::snprintf(text, sizeof(text), "%.17g", value.get<double>());
    return text;
  }
  default: return value.dump();
  }
}

/// The first path under `path` where `facts` and `manifest` differ (every
/// member of `facts` must be in `manifest`); empty when none.
std::string firstDifference(const json &facts, const json *manifest,
                            const std::string &path) {
  if (!manifest)
    return path;
  if (facts.is_object()) {
    if (!manifest->is_object())
      return path;
    for (const auto &[key, value] : facts.items()) {
      std::string difference = firstDifference(
          value, member(*manifest, key), path.empty() ? key : path + "." + key);
      if (!difference.empty())
        return difference;
    }
    return "";
  }
  if (facts.is_array()) {
    if (!manifest->is_array() || facts.size() != manifest->size())
      return path;
    for (size_t i = 0; i < facts.size(); ++i)
      if (!firstDifference(facts[i], &(*manifest)[i], path).empty())
        return path;
    return "";
  }
  if (facts.is_null())
    return manifest->is_null() ? "" : path;
  // Numbers compare by value (2 and 2.0 are one number); the rest by
  // type and value.
  return facts == *manifest && facts.is_number() == manifest->is_number()
             ? ""
             : path;
}

} // namespace

/// Manifests and facts nest a few levels; a deeper document is refused
/// before anything recurses into it.
static constexpr int kMaxDepth = 64;

bool specrt::parseJson(const std::string &text, json &value,
                       std::string &error) {
  // RFC 8259 leaves duplicate members' meaning open and a NUL would cut a
  // file name short: a manifest must mean one thing.
  struct Object {
    std::string path; // of its member names, "decoder.tree"
    std::set<std::string> members;
  };
  std::vector<Object> objects;
  std::string lastKey, problem;
  json::parser_callback_t strict = [&](int depth, json::parse_event_t event,
                                       json &parsed) {
    if (depth > kMaxDepth && problem.empty())
      problem = "nested more than " + std::to_string(kMaxDepth) + " levels deep";
    if (event == json::parse_event_t::object_start) {
      std::string parent = objects.empty() ? "" : objects.back().path;
      objects.push_back({objects.empty() ? ""
                         : parent.empty() ? lastKey
                                          : parent + "." + lastKey,
                         {}});
    } else if (event == json::parse_event_t::object_end && !objects.empty()) {
      objects.pop_back();
    }
    auto member = [&](const std::string &name) {
      const std::string &path = objects.empty() ? "" : objects.back().path;
      return "'" + (path.empty() ? name : path + "." + name) + "'";
    };
    if (problem.empty() && event == json::parse_event_t::key) {
      lastKey = parsed.get<std::string>();
      if (lastKey.find('\0') != std::string::npos)
        problem = "a NUL character (\\u0000) in a member name";
      else if (!objects.empty() && !objects.back().members.insert(lastKey).second)
        problem = "duplicate member " + member(lastKey);
    } else if (problem.empty() && event == json::parse_event_t::value &&
               parsed.is_string() &&
               parsed.get_ref<const std::string &>().find('\0') !=
                   std::string::npos) {
      problem = "a NUL character (\\u0000) in a string";
      if (!objects.empty())
        problem += " (in " + member(lastKey) + ")";
    }
    return problem.empty();
  };
  try {
    value = json::parse(text, strict);
  } catch (const json::exception &e) {
    // "[json.exception.parse_error.101] parse error at line 2, column 3: ...",
    // "[json.exception.out_of_range.406] number overflow parsing '1e999'"
    std::string what = e.what();
    size_t line = what.find("line "), bracket = what.find("] ");
    error = line != std::string::npos      ? what.substr(line)
            : bracket != std::string::npos ? what.substr(bracket + 2)
                                           : what;
    return false;
  }
  if (!problem.empty()) {
    error = problem;
    return false;
  }
  return true;
}

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

/// The format, its version and the entry points' ABI, which everything
/// else depends on.
static specrt_status checkFormat(const json &root, FieldReader &fields,
                                 const std::string &path, std::string &error) {
  if (!root.is_object() ||
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
  return SPECRT_OK;
}

/// target: the device and what the code was compiled for.
static void readTarget(FieldReader &fields, Manifest &m) {
  m.producer = fields.string("producer");
  m.device = fields.string("target.device");
  m.triple = fields.string("target.triple");
  m.cpu = fields.string("target.cpu");
  if (const json *features = fields.find("target.features", false)) {
    if (!features->is_array())
      fields.problem("target.features", "is not an array");
    else
      for (const json &feature : *features) {
        if (!feature.is_string())
          fields.problem("target.features", "has an entry that is not a string");
        else
          m.cpuFeatures.push_back(feature.get<std::string>());
      }
  }
  if (m.device == SPECRT_DEVICE_NAME_CUDA) {
    m.chip = fields.string("target.chip");
    m.ptxIsa = fields.string("target.ptx_isa");
  } else if (fields.error.empty() && m.device != SPECRT_DEVICE_NAME_CPU) {
    fields.problem("target.device", "is '" + m.device +
                                        "'; this runtime runs cpu and cuda");
  }
}

/// entry_points and files: the artifact's library, weights and tokenizer.
static void readFiles(FieldReader &fields, Manifest &m) {
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
  if (fields.find("decoder.cross_tokenizer", false)) {
    m.draftTokenizer = fields.string("decoder.cross_tokenizer.tokenizer.kind");
    if (fields.error.empty() && m.draftTokenizer == "tokenizer.json") {
      files.emplace_back("draft_tokenizer", &m.draftTokenizerFile);
      if (fields.find("files.draft_tokenizer_config", false))
        files.emplace_back("draft_tokenizer_config", &m.draftTokenizerConfigFile);
    } else if (fields.error.empty() && m.draftTokenizer != "bytes") {
      fields.problem("decoder.cross_tokenizer.tokenizer.kind",
                     "is '" + m.draftTokenizer + "'; expected 'bytes' or 'tokenizer.json'");
    }
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
}

/// Whether `shape` is a cache of `slots` slots: 2 x layers x slots x
/// kv_heads x capacity x head_dim, positive and under 1 TB of floats.
static bool isSlotCacheShape(const std::vector<int64_t> &shape,
                             int64_t slots) {
  double elements = 1;
  for (int64_t size : shape)
    elements *= static_cast<double>(size);
  return shape.size() == 6 && shape[0] == 2 && shape[2] == slots &&
         *std::min_element(shape.begin(), shape.end()) >= 1 &&
         elements * sizeof(float) <= 1e12;
}

/// decoder.max_batch, when the artifact has batched rounds: their entry
/// points and a cache shape of 2 x layers x max_batch x kv_heads x capacity
/// x head_dim floats that fits in memory; with a draft, its
/// entries and its cache's shape too.
static void readBatchedRounds(FieldReader &fields, Manifest &m) {
  if (!fields.find("decoder.max_batch", /*required=*/false))
    return;
  m.maxBatch = fields.integer("decoder.max_batch");
  m.prefillEntry = fields.string("entry_points.prefill");
  m.roundEntry = fields.string("entry_points.round");
  m.batchCacheShape = fields.integers("decoder.batch_cache_shape");
  m.batchProposer = fields.string("decoder.batch_proposer");
  if (m.batchProposer == "draft" || m.batchProposer == "heads" ||
      m.mtpModule())
    m.specRoundEntry = fields.string("entry_points.spec_round");
  bool drafts = m.batchProposer == "draft" || m.crossTokenizer();
  if (drafts) {
    m.draftPrefillEntry = fields.string("entry_points.draft_prefill");
    m.batchDraftCacheShape = fields.integers("decoder.batch_draft_cache_shape");
  } else if (m.mtpModule()) {
    m.draftPrefillEntry = fields.string("entry_points.module_prefill");
    m.batchDraftCacheShape =
        fields.integers("decoder.batch_module_cache_shape");
  }
  if (m.crossTokenizer()) {
    m.draftRoundEntry = fields.string("entry_points.draft_round");
    m.verifyEntry = fields.string("entry_points.verify");
    m.draftVocabSize = fields.integer("decoder.cross_tokenizer.vocab_size");
    m.draftBosTokenId = fields.integer("decoder.cross_tokenizer.bos_token_id");
    m.draftEosTokenId = fields.integer("decoder.cross_tokenizer.eos_token_id");
  }
  if (!fields.error.empty())
    return;
  if (m.batchProposer != "draft" && m.batchProposer != "heads" &&
      m.batchProposer != "none" && !m.crossTokenizer() && !m.mtpModule())
    return fields.problem("decoder.batch_proposer",
                          "is '" + m.batchProposer +
                              "'; expected 'draft', 'heads', 'mtp_module', "
                              "'cross_tokenizer_draft' or 'none'");
  const char *shapeRule = "must be 2 x layers x max_batch x kv_heads x "
                          "capacity x head_dim, positive and under 1 TB";
  // One slot only where a cross-tokenizer draft needs rounds to propose.
  if (m.maxBatch < (m.crossTokenizer() ? 1 : 2))
    fields.problem("decoder.max_batch",
                   m.crossTokenizer() ? "must be at least 1" : "must be at least 2");
  else if (!isSlotCacheShape(m.batchCacheShape, m.maxBatch))
    fields.problem("decoder.batch_cache_shape", shapeRule);
  else if (drafts && !isSlotCacheShape(m.batchDraftCacheShape, m.maxBatch))
    fields.problem("decoder.batch_draft_cache_shape", shapeRule);
  else if (m.mtpModule() &&
           !isSlotCacheShape(m.batchDraftCacheShape, m.maxBatch))
    fields.problem("decoder.batch_module_cache_shape", shapeRule);
  else if (m.crossTokenizer() &&
           (m.draftVocabSize < 1 || m.draftBosTokenId < 0 ||
            m.draftBosTokenId >= m.draftVocabSize || m.draftEosTokenId < 0 ||
            m.draftEosTokenId >= m.draftVocabSize))
    fields.problem("decoder.cross_tokenizer",
                   "must give a positive vocab_size and BOS and EOS ids in it");
}

/// model and decoder: the vocabulary, special tokens, the proposer and
/// the verification rule, and their consistency.
static void readDecoder(FieldReader &fields, Manifest &m) {
  m.vocabSize = fields.integer("model.vocab_size");
  m.bosTokenId = fields.integer("model.bos_token_id", /*nullable=*/true);
  m.eosTokenId = fields.integer("model.eos_token_id", /*nullable=*/true);
  m.padTokenId = fields.integer("model.pad_token_id", /*nullable=*/true);
  if (const json *stops = fields.find("model.stop_token_ids", false)) {
    if (!stops->is_array())
      fields.problem("model.stop_token_ids", "is not an array");
    else
      for (const json &id : *stops) {
        if (!isInteger(id) || integerOf(id) < 0 || integerOf(id) >= m.vocabSize)
          fields.problem("model.stop_token_ids", "has an entry that is not a token id");
        else
          m.stopTokenIds.push_back(integerOf(id));
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
  if (!fields.error.empty())
    return;
  if (m.vocabSize <= 0)
    fields.problem("model.vocab_size", "must be positive");
  else if (m.contextCapacity < 2)
    fields.problem("decoder.context_capacity", "must be at least 2");
  else if (m.proposer == "none" && m.proposals != 0)
    fields.problem("decoder.proposals", "must be 0 without a proposer");
  else if (m.proposer != "none" && m.proposals < 1)
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
  else
    readBatchedRounds(fields, m);
}

specrt_status specrt::parseManifest(const std::string &text,
                                    const std::string &path,
                                    Manifest &manifest, std::string &error) {
  json root;
  std::string jsonError;
  if (!parseJson(text, root, jsonError)) {
    error = path + " is not valid JSON: " + jsonError;
    return SPECRT_ERROR_FORMAT;
  }
  FieldReader fields(root, path);
  if (specrt_status status = checkFormat(root, fields, path, error))
    return status;
  readTarget(fields, manifest);
  readFiles(fields, manifest);
  readDecoder(fields, manifest);
  if (!fields.error.empty()) {
    error = fields.error;
    return SPECRT_ERROR_FORMAT;
  }
  manifest.document = std::move(root);
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
  json facts;
  std::string jsonError;
  if (length == SPECRT_FACTS_MAX_BYTES) {
    error = "'" + library + "': " SPECRT_FACTS_SYMBOL " is longer than " +
            std::to_string(SPECRT_FACTS_MAX_BYTES) + " bytes";
    return SPECRT_ERROR_FORMAT;
  }
  if (!parseJson(std::string(text, length), facts, jsonError) ||
      !facts.is_object()) {
    error = "'" + library + "': " SPECRT_FACTS_SYMBOL " is not a JSON object" +
            (jsonError.empty() ? "" : ": " + jsonError);
    return SPECRT_ERROR_FORMAT;
  }
  std::string path = firstDifference(facts, &manifest.document, "");
  if (path.empty())
    return SPECRT_OK;
  const json *said = at(manifest.document, path);
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
