//===- VocabularyBridge.cpp - tokens of two vocabularies that agree -------===//

#include "specrt/VocabularyBridge.h"

#include "specrt/Tokenizer.h"

#include <algorithm>
#include <unordered_map>

using namespace specrt;

Vocabulary Vocabulary::byteLevel(size_t size, int32_t bos, int32_t eos) {
  Vocabulary v;
  v.spellings.resize(size);
  v.spelled.assign(size, 0);
  for (size_t b = 0; b < std::min<size_t>(size, 256); ++b) {
    v.spellings[b] = std::string(1, static_cast<char>(b));
    v.spelled[b] = 1;
  }
  v.bos = bos;
  v.eos = eos;
  return v;
}

Vocabulary Vocabulary::of(const Tokenizer &tokenizer, size_t size, int32_t bos, int32_t eos) {
  Vocabulary v;
  size = std::max(size, tokenizer.vocabSize());
  v.spellings.resize(size);
  v.spelled.assign(size, 0);
  for (size_t id = 0; id < size; ++id)
    v.spelled[id] = tokenizer.spell(static_cast<int32_t>(id), v.spellings[id]);
  // BOS and EOS correspond by role even where the tokenizer does not call
  // them special.
  for (int32_t role : {bos, eos})
    if (role >= 0 && static_cast<size_t>(role) < size)
      v.spelled[role] = 0;
  v.bos = bos;
  v.eos = eos;
  return v;
}

VocabularyBridge VocabularyBridge::build(const Vocabulary &draft, const Vocabulary &target) {
  // The target's tokens by spelling; of several spelled alike (a piece and
  // an added token), the smallest id.
  std::unordered_map<std::string_view, int32_t> byBytes;
  for (size_t id = target.spellings.size(); id-- > 0;)
    if (target.spelled[id] && !target.spellings[id].empty())
      byBytes[target.spellings[id]] = static_cast<int32_t>(id);
  VocabularyBridge bridge;
  bridge.toTarget.assign(draft.spellings.size(), -1);
  for (size_t id = 0; id < draft.spellings.size(); ++id) {
    int32_t to = -1;
    if (draft.spelled[id]) {
      auto found = byBytes.find(draft.spellings[id]);
      to = found == byBytes.end() ? -1 : found->second;
    } else if (static_cast<int32_t>(id) == draft.bos) {
      to = target.bos;
    } else if (static_cast<int32_t>(id) == draft.eos) {
      to = target.eos;
    }
    bridge.toTarget[id] = to;
    bridge.mapped += to >= 0;
  }
  return bridge;
}

/// How many bytes at the end of `text` begin a UTF-8 character that has not
/// ended yet (0-3).
static size_t unfinishedCharacter(std::string_view text) {
  for (size_t back = 1; back <= std::min<size_t>(3, text.size()); ++back) {
    auto c = static_cast<unsigned char>(text[text.size() - back]);
    if ((c & 0xC0) == 0x80)
      continue; // a continuation byte: look further back
    size_t length = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return length > back ? back : 0;
  }
  return 0;
}

size_t DraftContext::append(std::string_view bytes) {
  committed.append(bytes);
  // A character split between appends is tokenized once it is whole.
  size_t stable = committed.size() - unfinishedCharacter(committed);
  // Tokenize again from `window` tokens back: a token that ended the old
  // text may merge with the new bytes, and a pre-tokenizer's word can reach
  // back a little further. Where the tokens did not spell the text (ill-
  // formed UTF-8 reads as U+FFFD), from the start.
  size_t restart = !spelledExactly ? 0 : tokens.size() > window ? tokens.size() - window : 0;
  size_t start = restart ? ends[restart - 1] : 0;
  std::vector<int32_t> fresh =
      encode(std::string_view(committed).substr(start, stable - start));
  size_t kept = restart;
  while (kept < tokens.size() && kept - restart < fresh.size() &&
         tokens[kept] == fresh[kept - restart])
    ++kept;
  tokens.resize(restart);
  ends.resize(restart);
  size_t end = start;
  for (int32_t id : fresh) {
    if (id >= 0 && static_cast<size_t>(id) < vocabulary->spellings.size() &&
        vocabulary->spelled[id])
      end += vocabulary->spellings[id].size();
    tokens.push_back(id);
    ends.push_back(std::min(end, stable));
  }
  spelledExactly = end == stable;
  return kept;
}
