//===- TreeCostModel.h - which tree of candidates pays ---------*- C++ -*-===//
//
// The cost model behind spec-choose-tree and `specc --tree auto`, kept free
// of IR so that it can be unit-tested: Medusa's construction of candidate
// trees from per-depth top-k acceptance, and its estimate from a profiled
// tree's rounds.
//
//===----------------------------------------------------------------------===//

#ifndef SPECULA_PASSES_DECODER_TREECOSTMODEL_H
#define SPECULA_PASSES_DECODER_TREECOSTMODEL_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace specula {

/// acceptance[d][r]: the probability that the r-th most likely token (0:
/// the most likely) of the proposer at depth d + 1 is the target's token,
/// given that the path to it was accepted. Medusa's model treats depths and
/// paths as independent.
using TopKAcceptance = std::vector<std::vector<double>>;

/// A tree of candidates as #spec.tree holds it: node i (from 1) has parent
/// parents[i - 1] (0: the root) and is the ranks[i - 1]-th most likely token
/// of its depth; parents come before their children.
struct TreeShape {
  /// One candidate as Medusa's medusa_choices write it: the ranks along its
  /// path from the root ([0, 1]: the second most likely token of head 2
  /// under the most likely of head 1).
  using Path = std::vector<int64_t>;

  std::vector<int64_t> parents, ranks;

  /// The tree of `paths` (in any order), rows ordered by depth, then path;
  /// nothing, and `error` set, when a path is listed twice or without its
  /// parent.
  static std::optional<TreeShape> fromPaths(std::vector<Path> paths,
                                            std::string &error);
  /// Each candidate's path, in row order (entry i - 1: node i's).
  std::vector<Path> getPaths() const;

  int64_t getNumNodes() const { return parents.size(); }
  /// The depth of row `row` (0: the root).
  int64_t getDepth(int64_t row) const;
  /// Whether every node is the most likely token: a chain one head deep per
  /// depth, which a decoder verifies without a tree.
  bool isTopOneChain() const;
};

/// A path as `[0, 1]`, and a list of paths as `[[0], [0, 1]]`.
std::string formatPath(const TreeShape::Path &path);
std::string formatPaths(const std::vector<TreeShape::Path> &paths);

/// Expected tokens per target forward of `tree`: 1 (the target's own) plus,
/// for every node, the probability that its whole path is accepted.
double expectedTreeTokens(const TreeShape &tree,
                          const TopKAcceptance &acceptance);

struct TreeChoice {
  /// Ordered by depth, then by the ranks along the path (as `specc --tree`
  /// orders Medusa's paths). Empty when no tree predicts a speedup above 1.
  TreeShape tree;
  double expectedTokens = 1.0;
  /// Over target-only decoding, under chooseTree's round cost.
  double speedup = 1.0;
};

/// The tree of at most `maxNodes` candidates with the highest predicted
/// speedup, when a round that verifies n candidates D deep costs
/// 1 + n * verifyCost + D * depthCost target steps (`depthCost`: a draft's
/// forward per depth; 0 for Medusa heads, which propose inside the
/// target's forward). For each size and depth limit, the best tree takes
/// the nodes with the highest path probabilities (the product of
/// acceptance along the path; Medusa's construction), which always form a
/// tree because a child is never more likely than its parent; ties go to
/// the smaller tree.
TreeChoice chooseTree(const TopKAcceptance &acceptance, double verifyCost,
                      int64_t maxNodes, double depthCost = 0.0);

/// Estimates each (depth, rank)'s acceptance from the verify rounds of a
/// decoder that verified `tree`, counted by the node they ended at
/// (`roundsByFinalNode[0]`: the root). A node was accepted in the rounds that
/// ended in its subtree; pooled over the nodes of a (depth, rank), the
/// estimate is those rounds over the rounds that accepted the parents. Ranks
/// the tree did not have, or whose parents were never accepted, estimate 0.
TopKAcceptance
estimateTopKAcceptance(const TreeShape &tree,
                       const std::vector<int64_t> &roundsByFinalNode);

} // namespace specula

#endif // SPECULA_PASSES_DECODER_TREECOSTMODEL_H
