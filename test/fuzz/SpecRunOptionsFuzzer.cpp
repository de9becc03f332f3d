//===- SpecRunOptionsFuzzer.cpp - libFuzzer target: spec-run's options ----===//
//
// Splits each input at NUL bytes into a command line and parses it as
// spec-run does (tools/spec-run/Options.h). Any command line may be refused
// with a usage error; none may crash.
//
//===----------------------------------------------------------------------===//

#include "tools/spec-run/Options.h"

#include <cstdio>
#include <string>
#include <vector>

// "--prompt-file /dev/stdin" must not wait for a terminal.
extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  return std::freopen("/dev/null", "r", stdin) ? 0 : 1;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<std::string> words{"spec-run"};
  std::string word;
  for (size_t i = 0; i < size && words.size() < 64; ++i) {
    if (data[i] == 0) {
      words.push_back(word);
      word.clear();
    } else {
      word.push_back(static_cast<char>(data[i]));
    }
  }
  if (!word.empty())
    words.push_back(word);
  std::vector<char *> argv;
  for (std::string &w : words)
    argv.push_back(w.data());
  argv.push_back(nullptr);
  specrun::Options options;
  (void)specrun::parseOptions(static_cast<int>(words.size()), argv.data(),
                              options);
  return 0;
}
