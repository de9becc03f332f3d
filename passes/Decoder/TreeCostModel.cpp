//===- TreeCostModel.cpp - which tree of candidates pays ------------------===//

#include "passes/Decoder/TreeCostModel.h"

#include <algorithm>
#include <cassert>
#include <map>
#include <queue>
#include <tuple>

using namespace specula;

int64_t TreeShape::getDepth(int64_t row) const {
  int64_t depth = 0;
  for (; row > 0; row = parents[row - 1])
    ++depth;
  return depth;
}

bool TreeShape::isTopOneChain() const {
  for (int64_t node = 1; node <= getNumNodes(); ++node)
    if (ranks[node - 1] != 0 || parents[node - 1] != node - 1)
      return false;
  return true;
}

std::optional<TreeShape> TreeShape::fromPaths(std::vector<Path> paths,
                                              std::string &error) {
  std::sort(paths.begin(), paths.end(), [](const Path &a, const Path &b) {
    return std::make_pair(a.size(), a) < std::make_pair(b.size(), b);
  });
  std::map<Path, int64_t> rowOf{{{}, 0}};
  TreeShape tree;
  for (const Path &path : paths) {
    assert(!path.empty() && "the root is not a candidate");
    Path parent(path.begin(), path.end() - 1);
    auto found = rowOf.find(parent);
    if (found == rowOf.end()) {
      error = "path " + formatPath(path) +
              " has no parent: " + formatPath(parent) + " must be listed too";
      return std::nullopt;
    }
    if (!rowOf.emplace(path, tree.getNumNodes() + 1).second) {
      error = "path " + formatPath(path) + " is listed twice";
      return std::nullopt;
    }
    tree.parents.push_back(found->second);
    tree.ranks.push_back(path.back());
  }
  return tree;
}

std::vector<TreeShape::Path> TreeShape::getPaths() const {
  std::vector<Path> paths(getNumNodes() + 1); // row 0: the root
  for (int64_t node = 1; node <= getNumNodes(); ++node) {
    paths[node] = paths[parents[node - 1]];
    paths[node].push_back(ranks[node - 1]);
  }
  paths.erase(paths.begin());
  return paths;
}

std::string specula::formatPath(const TreeShape::Path &path) {
  std::string out = "[";
  for (size_t i = 0; i < path.size(); ++i)
    out += (i ? ", " : "") + std::to_string(path[i]);
  return out + "]";
}

std::string specula::formatPaths(const std::vector<TreeShape::Path> &paths) {
  std::string out = "[";
  for (size_t i = 0; i < paths.size(); ++i)
    out += (i ? ", " : "") + formatPath(paths[i]);
  return out + "]";
}

/// The acceptance of rank `rank` at depth `depth` (from 1), 0 outside the
/// table.
static double accepts(const TopKAcceptance &acceptance, int64_t depth,
                      int64_t rank) {
  if (depth < 1 || depth > static_cast<int64_t>(acceptance.size()))
    return 0.0;
  const std::vector<double> &ranks = acceptance[depth - 1];
  return rank < static_cast<int64_t>(ranks.size()) ? ranks[rank] : 0.0;
}

double specula::expectedTreeTokens(const TreeShape &tree,
                                   const TopKAcceptance &acceptance) {
  std::vector<double> reached(tree.getNumNodes() + 1, 1.0);
  double expected = 1.0;
  for (int64_t node = 1; node <= tree.getNumNodes(); ++node) {
    reached[node] =
        reached[tree.parents[node - 1]] *
        accepts(acceptance, tree.getDepth(node), tree.ranks[node - 1]);
    expected += reached[node];
  }
  return expected;
}

/// chooseTree among the trees no deeper than `depthLimit`: for each size,
/// the nodes of highest path probability (Medusa's construction), which
/// always form a tree because a child is never more likely than its parent.
static TreeChoice chooseTreeUpTo(const TopKAcceptance &acceptance,
                                 int64_t depthLimit, double verifyCost,
                                 double depthCost, int64_t maxNodes) {
  // Nodes by falling path probability: a frontier of candidates whose
  // parents are taken, best first (ties: shallower, then the earlier path).
  using Path = TreeShape::Path;
  using Candidate = std::pair<double, Path>;
  auto worse = [](const Candidate &a, const Candidate &b) {
    if (a.first != b.first)
      return a.first < b.first;
    return std::make_pair(a.second.size(), a.second) >
           std::make_pair(b.second.size(), b.second);
  };
  std::priority_queue<Candidate, std::vector<Candidate>, decltype(worse)>
      frontier(worse);
  auto pushChildren = [&](const Path &parent, double probability) {
    int64_t depth = parent.size() + 1;
    if (depth > depthLimit)
      return;
    for (int64_t rank = 0;
         rank < static_cast<int64_t>(acceptance[depth - 1].size()); ++rank) {
      double p = probability * acceptance[depth - 1][rank];
      if (p <= 0.0)
        continue;
      Path child = parent;
      child.push_back(rank);
      frontier.emplace(p, std::move(child));
    }
  };
  pushChildren({}, 1.0);
  std::vector<Path> taken;
  double expected = 1.0;
  size_t bestSize = 0, depth = 0;
  TreeChoice best;
  while (static_cast<int64_t>(taken.size()) < maxNodes && !frontier.empty()) {
    Candidate next = frontier.top();
    frontier.pop();
    expected += next.first;
    depth = std::max(depth, next.second.size());
    taken.push_back(next.second);
    pushChildren(next.second, next.first);
    double speedup =
        expected / (1.0 + static_cast<double>(taken.size()) * verifyCost +
                    static_cast<double>(depth) * depthCost);
    if (speedup > best.speedup) {
      best.speedup = speedup;
      best.expectedTokens = expected;
      bestSize = taken.size();
    }
  }
  taken.resize(bestSize);
  // Taken nodes are distinct and come after their parents: a tree.
  std::string error;
  best.tree = *TreeShape::fromPaths(std::move(taken), error);
  return best;
}

TreeChoice specula::chooseTree(const TopKAcceptance &acceptance,
                               double verifyCost, int64_t maxNodes,
                               double depthCost) {
  assert(verifyCost >= 0.0 && depthCost >= 0.0 && maxNodes >= 0 &&
         "invalid arguments");
  // The best tree of each depth limit: the best tree of depth D is among
  // the candidates of limit D, whose own depth costs no more. The deepest
  // limit first, so that without a depth cost its choice stands.
  TreeChoice best;
  for (int64_t limit = acceptance.size(); limit >= 1; --limit) {
    TreeChoice choice =
        chooseTreeUpTo(acceptance, limit, verifyCost, depthCost, maxNodes);
    if (choice.speedup > best.speedup)
      best = std::move(choice);
  }
  return best;
}

TopKAcceptance
specula::estimateTopKAcceptance(const TreeShape &tree,
                                const std::vector<int64_t> &roundsByFinalNode) {
  int64_t nodes = tree.getNumNodes();
  assert(static_cast<int64_t>(roundsByFinalNode.size()) == nodes + 1 &&
         "one count per tree row");
  // Rounds that accepted each row: those that ended in its subtree
  // (children come after their parents, so one backward sweep adds up).
  std::vector<double> accepted(roundsByFinalNode.begin(),
                               roundsByFinalNode.end());
  for (int64_t node = nodes; node >= 1; --node)
    accepted[tree.parents[node - 1]] += accepted[node];
  std::map<std::pair<int64_t, int64_t>, std::pair<double, double>> pooled;
  int64_t deepest = 0, widest = 0;
  for (int64_t node = 1; node <= nodes; ++node) {
    int64_t depth = tree.getDepth(node), rank = tree.ranks[node - 1];
    deepest = std::max(deepest, depth);
    widest = std::max(widest, rank + 1);
    auto &[hits, tries] = pooled[{depth, rank}];
    hits += accepted[node];
    tries += accepted[tree.parents[node - 1]];
  }
  TopKAcceptance acceptance(deepest, std::vector<double>(widest, 0.0));
  for (const auto &[at, counts] : pooled)
    if (counts.second > 0)
      acceptance[at.first - 1][at.second] = counts.first / counts.second;
  return acceptance;
}
