//===- DecodeOutput.cpp - check what a decode loop returned ---------------===//

#include "Device.h"

#include <algorithm>

std::string specrt::checkDecodeOutput(const DecodeOutput &output,
                                      const int64_t *prompt,
                                      size_t promptLength, int64_t vocabSize,
                                      int64_t contextCapacity) {
  const std::vector<int64_t> &sequence = output.sequence;
  if (sequence.size() <= promptLength ||
      static_cast<int64_t>(sequence.size()) > contextCapacity)
    return "a sequence of " + std::to_string(sequence.size()) +
           " tokens for a prompt of " + std::to_string(promptLength) +
           " and a context of " + std::to_string(contextCapacity);
  if (!std::equal(prompt, prompt + promptLength, sequence.begin()))
    return "a sequence that does not start with the prompt";
  for (size_t i = promptLength; i < sequence.size(); ++i)
    if (sequence[i] < 0 || sequence[i] >= vocabSize)
      return "token " + std::to_string(sequence[i]) + " at position " +
             std::to_string(i) + ", outside the vocabulary";
  int64_t rounds = 0;
  for (int64_t count : output.acceptedHistogram) {
    if (count < 0)
      return "a negative count of rounds";
    rounds += count;
  }
  if (output.targetForwards < 1 || rounds > output.targetForwards)
    return std::to_string(output.targetForwards) + " target forwards for " +
           std::to_string(rounds) + " verify rounds";
  return {};
}
