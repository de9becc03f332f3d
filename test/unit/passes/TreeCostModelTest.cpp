//===- TreeCostModelTest.cpp - spec-choose-tree's cost model --------------===//

#include "passes/Decoder/TreeCostModel.h"
#include "passes/Decoder/GammaCostModel.h"

#include "gtest/gtest.h"

#include <random>

using namespace specula;

namespace {
/// Every candidate of `depths` depths and `ranks` ranks per depth, as the
/// tree holding all of them (rows ordered by depth, then path).
TreeShape fullTree(int64_t depths, int64_t ranks) {
  TreeShape tree;
  std::vector<int64_t> level{0};
  for (int64_t depth = 1; depth <= depths; ++depth) {
    std::vector<int64_t> next;
    for (int64_t parent : level)
      for (int64_t rank = 0; rank < ranks; ++rank) {
        tree.parents.push_back(parent);
        tree.ranks.push_back(rank);
        next.push_back(tree.getNumNodes());
      }
    level = next;
  }
  return tree;
}

/// The subtree of `full` holding the nodes whose bits are set in `mask`, or
/// nothing when a node's parent is missing.
std::optional<TreeShape> subtree(const TreeShape &full, uint64_t mask) {
  TreeShape tree;
  std::vector<int64_t> rowOf(full.getNumNodes() + 1, -1);
  rowOf[0] = 0;
  for (int64_t node = 1; node <= full.getNumNodes(); ++node) {
    if (!(mask >> (node - 1) & 1))
      continue;
    int64_t parent = rowOf[full.parents[node - 1]];
    if (parent < 0)
      return std::nullopt;
    tree.parents.push_back(parent);
    tree.ranks.push_back(full.ranks[node - 1]);
    rowOf[node] = tree.getNumNodes();
  }
  return tree;
}
} // namespace

TEST(TreeCostModel, AChainOfTopOneCandidatesIsTheGeometricSeries) {
  for (double alpha : {0.0, 0.4, 0.9})
    for (int64_t depth = 1; depth <= 4; ++depth) {
      TreeShape chain;
      for (int64_t node = 1; node <= depth; ++node) {
        chain.parents.push_back(node - 1);
        chain.ranks.push_back(0);
      }
      EXPECT_TRUE(chain.isTopOneChain());
      EXPECT_NEAR(expectedTreeTokens(chain, TopKAcceptance(depth, {alpha})),
                  expectedTokensPerStep(alpha, depth), 1e-12);
    }
}

TEST(TreeCostModel, ExpectedTokensSumPathProbabilities) {
  // [[0], [1], [0, 0], [1, 0]] with a[1] = {0.6, 0.2}, a[2] = {0.5}:
  // 1 + 0.6 + 0.2 + 0.3 + 0.1.
  TreeShape tree{{0, 0, 1, 2}, {0, 1, 0, 0}};
  EXPECT_FALSE(tree.isTopOneChain());
  EXPECT_EQ(tree.getDepth(4), 2);
  EXPECT_NEAR(expectedTreeTokens(tree, {{0.6, 0.2}, {0.5}}), 2.2, 1e-12);
}

TEST(TreeCostModel, ChoosesTheBestSubtreeOfEverySize) {
  // Against every subtree of the full tree of 3 depths x 2 ranks (14 nodes,
  // 2^14 subsets), for random tables, verify costs and costs per depth.
  std::mt19937_64 random(7);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  TreeShape full = fullTree(3, 2);
  for (int trial = 0; trial < 20; ++trial) {
    TopKAcceptance table(3, std::vector<double>(2));
    for (std::vector<double> &ranks : table) {
      ranks[0] = uniform(random);
      ranks[1] = uniform(random) * (1.0 - ranks[0]);
    }
    double verifyCost = trial % 4 == 0 ? 0.0 : 0.3 * uniform(random);
    // A draft's forward per depth, or none (Medusa heads).
    double depthCost = trial % 3 == 0 ? 0.0 : 0.5 * uniform(random);
    int64_t maxNodes = 1 + trial % 14;
    double best = 1.0;
    for (uint64_t mask = 1; mask < (1u << full.getNumNodes()); ++mask) {
      std::optional<TreeShape> tree = subtree(full, mask);
      if (!tree || tree->getNumNodes() > maxNodes)
        continue;
      int64_t depth = 0;
      for (int64_t node = 1; node <= tree->getNumNodes(); ++node)
        depth = std::max(depth, tree->getDepth(node));
      best = std::max(best, expectedTreeTokens(*tree, table) /
                                (1.0 + tree->getNumNodes() * verifyCost +
                                 depth * depthCost));
    }
    TreeChoice choice = chooseTree(table, verifyCost, maxNodes, depthCost);
    EXPECT_NEAR(choice.speedup, best, 1e-12) << "trial " << trial;
    EXPECT_LE(choice.tree.getNumNodes(), maxNodes);
    // The choice is what it claims, and a tree: parents first, rows by
    // depth.
    EXPECT_NEAR(expectedTreeTokens(choice.tree, table), choice.expectedTokens,
                1e-12);
    for (int64_t node = 1; node <= choice.tree.getNumNodes(); ++node) {
      EXPECT_LT(choice.tree.parents[node - 1], node);
      if (node > 1)
        EXPECT_LE(choice.tree.getDepth(node - 1), choice.tree.getDepth(node));
    }
  }
}

TEST(TreeCostModel, NoTreeWhenNothingPays) {
  TreeChoice choice = chooseTree({{0.3, 0.1}}, /*verifyCost=*/0.5, 8);
  EXPECT_EQ(choice.tree.getNumNodes(), 0);
  EXPECT_DOUBLE_EQ(choice.speedup, 1.0);
  // Candidates that are never accepted are never taken.
  EXPECT_EQ(chooseTree({{0.5, 0.0}, {0.0}}, 0.0, 8).tree.getNumNodes(), 1);
}

TEST(TreeCostModel, EstimatesCountSubtreesOverParents) {
  // [[0], [1], [0, 0]]: 10 rounds accepted nothing, 20 ended at [0], 5 at
  // [1], 15 at [0, 0]. Depth 1: rank 0 in 35 of 50 rounds, rank 1 in 5;
  // depth 2: rank 0 in 15 of the 35 that accepted [0].
  TreeShape tree{{0, 0, 1}, {0, 1, 0}};
  TopKAcceptance estimate = estimateTopKAcceptance(tree, {10, 20, 5, 15});
  ASSERT_EQ(estimate.size(), 2u);
  ASSERT_EQ(estimate[0].size(), 2u);
  EXPECT_DOUBLE_EQ(estimate[0][0], 0.7);
  EXPECT_DOUBLE_EQ(estimate[0][1], 0.1);
  EXPECT_DOUBLE_EQ(estimate[1][0], 15.0 / 35.0);
  // Depth 2 had no rank 1.
  EXPECT_DOUBLE_EQ(estimate[1][1], 0.0);
}

TEST(TreeCostModel, EstimatesRecoverTheAcceptanceOfSimulatedRounds) {
  // Rounds walk the full tree of 3 depths x 3 ranks: at each depth the
  // target's token is rank r with probability a[d][r] (else none of the
  // candidates). The estimate pools all nodes of a (depth, rank).
  TopKAcceptance truth{{0.55, 0.15, 0.05}, {0.45, 0.1, 0.05}, {0.4, 0.1, 0.0}};
  TreeShape tree = fullTree(3, 3);
  std::vector<int64_t> rounds(tree.getNumNodes() + 1, 0);
  std::mt19937_64 random(11);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  for (int round = 0; round < 200000; ++round) {
    int64_t row = 0;
    for (int64_t depth = 1; depth <= 3; ++depth) {
      double u = uniform(random), below = 0.0;
      int64_t child = -1;
      for (int64_t rank = 0; rank < 3 && child < 0; ++rank) {
        below += truth[depth - 1][rank];
        if (u < below)
          for (int64_t node = 1; node <= tree.getNumNodes(); ++node)
            if (tree.parents[node - 1] == row && tree.ranks[node - 1] == rank)
              child = node;
      }
      if (child < 0)
        break;
      row = child;
    }
    ++rounds[row];
  }
  TopKAcceptance estimate = estimateTopKAcceptance(tree, rounds);
  for (size_t depth = 0; depth < truth.size(); ++depth)
    for (size_t rank = 0; rank < truth[depth].size(); ++rank)
      EXPECT_NEAR(estimate[depth][rank], truth[depth][rank], 0.01)
          << "depth " << depth + 1 << " rank " << rank;
}

TEST(TreeCostModel, PathsMakeTreesOrderedByDepth) {
  std::string error;
  std::optional<TreeShape> tree =
      TreeShape::fromPaths({{0, 0}, {1}, {0}, {1, 2}}, error);
  ASSERT_TRUE(tree) << error;
  EXPECT_EQ(tree->parents, (std::vector<int64_t>{0, 0, 1, 2}));
  EXPECT_EQ(tree->ranks, (std::vector<int64_t>{0, 1, 0, 2}));
  EXPECT_EQ(formatPaths(tree->getPaths()), "[[0], [1], [0, 0], [1, 2]]");
  EXPECT_FALSE(TreeShape::fromPaths({{0}, {1, 0}}, error));
  EXPECT_EQ(error, "path [1, 0] has no parent: [1] must be listed too");
  EXPECT_FALSE(TreeShape::fromPaths({{0}, {0}}, error));
  EXPECT_EQ(error, "path [0] is listed twice");
}
