//===- TreeCostModel.h - which tree of candidates pays ---------*- C++ -*-===//
//
// The cost model behind spec-choose-tree and `specc --tree auto`, kept free
// of IR so that it can be unit-tested: Medusa's construction of candidate
// trees from per-depth top-k acceptance, and its estimate from a profiled
// tree's rounds.
//
//===----------------------------------------------------------------------===//

#ifndef SPECULA_PASSES_TREECOSTMODEL_H
#define SPECULA_PASSES_TREECOSTMODEL_H

#include <cstdint>
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
  std::vector<int64_t> parents, ranks;

  int64_t getNumNodes() const { return parents.size(); }
  /// The depth of row `row` (0: the root).
  int64_t getDepth(int64_t row) const;
  /// Whether every node is the most likely token: a chain one head deep per
  /// depth, which a decoder verifies without a tree.
  bool isTopOneChain() const;
};

/// Expected tokens per target forward of `tree`: 1 (the target's own) plus,
/// for every node, the probability that its whole path is accepted.
double expectedTreeTokens(const TreeShape &tree,
                          const TopKAcceptance &acceptance);

struct TreeChoice {
  /// Ordered by depth, then by the ranks along the path (as `specc --tree`
  /// orders Medusa's paths). Empty when no tree predicts a speedup above 1.
  TreeShape tree;
  double expectedTokens = 1.0;
  /// Over target-only decoding, when verifying n candidates costs
  /// 1 + n * verifyCost target steps.
  double speedup = 1.0;
};

/// The tree of at most `maxNodes` candidates with the highest predicted
/// speedup. For each size, the best tree takes the nodes with the highest
/// path probabilities (the product of acceptance along the path; Medusa's
/// construction), which always form a tree because a child is never more
/// likely than its parent; ties go to the smaller tree.
TreeChoice chooseTree(const TopKAcceptance &acceptance, double verifyCost,
                      int64_t maxNodes);

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

#endif // SPECULA_PASSES_TREECOSTMODEL_H
