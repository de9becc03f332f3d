//===- Manifest.h - what an artifact's manifest.json says --------*- C++ -*-===//

#ifndef SPECRT_MANIFEST_H
#define SPECRT_MANIFEST_H

#include "specrt/specrt.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace specrt {

struct ArtifactFile {
  std::string name; // relative to the artifact directory
  uint64_t size = 0;
  std::string checksum; // "fnv1a64:<hex>"
};

struct Manifest {
  std::string device, triple, cpu, producer;
  /// CPU features the code may use (target.features).
  std::vector<std::string> cpuFeatures;
  /// CUDA: the chip the PTX is for (target.chip, "sm_90") and its PTX ISA
  /// version (target.ptx_isa, "7.8").
  std::string chip, ptxIsa;
  std::string generateEntry, targetOnlyEntry;
  /// Batched rounds (decoder.max_batch, 0 without): their entry points and
  /// the shape of the cache of slots they update.
  int64_t maxBatch = 0;
  std::string prefillEntry, roundEntry;
  std::vector<int64_t> batchCacheShape;
  /// What proposes in the rounds (decoder.batch_proposer): "draft",
  /// "heads", "mtp_module" or "none". The speculative round (empty with
  /// none); with a draft or an MTP module, its prefill and the shape of its
  /// cache of slots (entry_points.module_prefill and
  /// decoder.batch_module_cache_shape for a module).
  std::string batchProposer;
  std::string draftPrefillEntry, specRoundEntry;
  std::vector<int64_t> batchDraftCacheShape;
  bool mtpModule() const { return batchProposer == "mtp_module"; }
  /// A draft with another tokenizer (batch_proposer
  /// "cross_tokenizer_draft", decoder.cross_tokenizer): its vocabulary and
  /// BOS/EOS, its tokenizer ("bytes", or "tokenizer.json":
  /// files.draft_tokenizer), and the rounds that translate between them:
  /// the draft's plain round and the target's verification of given
  /// proposals.
  int64_t draftVocabSize = 0, draftBosTokenId = -1, draftEosTokenId = -1;
  std::string draftTokenizer;
  ArtifactFile draftTokenizerFile, draftTokenizerConfigFile;
  std::string draftRoundEntry, verifyEntry;
  bool crossTokenizer() const { return batchProposer == "cross_tokenizer_draft"; }
  ArtifactFile library, weights;
  int64_t vocabSize = 0, bosTokenId = -1, eosTokenId = -1, padTokenId = -1;
  /// model.tokenizer.kind: "bytes" (ids 0-255 are bytes) or "tokenizer.json"
  /// (files.tokenizer, and files.tokenizer_config when there is one).
  std::string tokenizer;
  ArtifactFile tokenizerFile, tokenizerConfigFile;
  /// Tokens besides EOS that end generation (model.stop_token_ids).
  std::vector<int64_t> stopTokenIds;
  std::string proposer, verify;
  int64_t proposals = 0, contextCapacity = 0, topK = 0;
  double temperature = 0, topP = 1;
  /// decoder.tree: a tree decoder's candidates (node i from 1 has parent
  /// treeParents[i - 1], 0 the root, and is its depth's treeRanks[i - 1]-th
  /// most likely token); empty for a chain.
  std::vector<int64_t> treeParents, treeRanks;
  /// The depth of tree node `node` (0: the root). Parents must precede
  /// their children (readManifest checks).
  int64_t treeDepth(size_t node) const {
    int64_t depth = 0;
    for (; node > 0; node = static_cast<size_t>(treeParents[node - 1]))
      ++depth;
    return depth;
  }
  /// The whole document, which the library's facts are checked against.
  nlohmann::json document;
};

/// Parses JSON strictly (no duplicate members, no NUL in strings, at most
/// 64 levels deep); on failure returns false with `error` naming the line
/// and column, or the problem.
bool parseJson(const std::string &text, nlohmann::json &value,
               std::string &error);

/// Reads and checks `<directory>/manifest.json`. On failure returns the
/// status and sets `error` to a message naming the file and the field.
specrt_status readManifest(const std::string &directory, Manifest &manifest,
                           std::string &error);

/// Parses and checks a manifest's text; `path` names it in messages.
specrt_status parseManifest(const std::string &text, const std::string &path,
                            Manifest &manifest, std::string &error);

/// Checks the compiled library's own facts (SPECRT_FACTS_SYMBOL's JSON text,
/// read from `library`) against the manifest: every member of the facts must
/// be in the manifest at the same path with the same value.
specrt_status checkLibraryFacts(const Manifest &manifest, const char *facts,
                                const std::string &library,
                                std::string &error);

/// Checks a file of the artifact against the manifest's size and (when
/// `checksum`) its checksum.
specrt_status checkArtifactFile(const std::string &path, const void *data,
                                size_t size, const ArtifactFile &expected,
                                bool checksum, std::string &error);

} // namespace specrt

#endif // SPECRT_MANIFEST_H
