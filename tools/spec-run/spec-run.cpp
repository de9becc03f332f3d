//===- spec-run.cpp - generate text with a compiled speculative decoder ---===//
//
//   spec-run model.spec --prompt "def main(" [--max-new-tokens N] [--seed S]
//            [--no-speculation | --compare] [--json] [--profile out.json]
//
// A thin command line over the specrt runtime (no MLIR): opens the artifact
// that `specc -o model.spec` wrote, tokenizes the prompt with the model's
// byte-level tokenizer, generates, and prints the text and the statistics.
//
//===----------------------------------------------------------------------===//

#include "tools/spec-run/Options.h"
#include "specrt/TextStream.h"
#include "specrt/Tokenizer.h"
#include "specrt/specrt.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace {
struct Run {
  std::vector<int64_t> tokens;
  std::vector<double> acceptedPerPosition;
  /// Tree decoders: rounds by the tree row they ended at.
  std::vector<int64_t> roundsByFinalNode;
  specrt_result stats{};
};

std::string formatList(const std::vector<double> &values, const char *format,
                       const char *separator) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) {
    char buffer[32];
    std::snprintf(buffer, sizeof(buffer), format, values[i]);
    out += (i ? separator : "") + std::string(buffer);
  }
  return out;
}

std::string formatIntegers(const int64_t *values, size_t count) {
  std::string out;
  for (size_t i = 0; i < count; ++i)
    out += (i ? ", " : "") + std::to_string(values[i]);
  return out;
}

std::string jsonString(const std::string &s) {
  std::string out = "\"";
  // JSON text is UTF-8: ill-formed byte sequences (byte-level tokens need
  // not form UTF-8) become U+FFFD.
  for (unsigned char c : specrt::toValidUtf8(s)) {
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    default:
      if (c < 0x20 || c == 0x7f) {
        char escaped[8];
        std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
        out += escaped;
      } else {
        out.push_back(static_cast<char>(c));
      }
    }
  }
  return out + "\"";
}

/// spec-run's streamed text (specrt_generate_options.on_token): what each
/// committed token adds, printed as the rounds commit them.
struct Printer {
  specrt::TextStream text;
  std::string printed; // of the new tokens' text

  static void onToken(int64_t token, void *user) {
    Printer &p = *static_cast<Printer *>(user);
    std::string piece = p.text.push(token);
    if (piece.empty())
      return;
    std::fputs(piece.c_str(), stdout);
    std::fflush(stdout);
    p.printed += piece;
  }
};

/// The per-token acceptance a of the i.i.d. model that explains a mean of
/// `mean` tokens per target forward with `gamma` proposals:
/// (1 - a^(gamma+1)) / (1 - a) = mean. What spec-choose-gamma expects.
double perTokenAcceptance(double mean, int64_t gamma) {
  if (mean <= 1)
    return 0;
  if (mean >= gamma + 1)
    return 1;
  double lo = 0, hi = 1;
  for (int i = 0; i < 60; ++i) {
    double a = (lo + hi) / 2;
    double expected = (1 - std::pow(a, gamma + 1)) / (1 - a);
    (expected < mean ? lo : hi) = a;
  }
  return (lo + hi) / 2;
}
} // namespace

using namespace specrun;

namespace {
/// One spec-run invocation: the open model, the prompt and what is streamed.
struct Session {
  const Options &o;
  specrt_model *model;
  specrt_model_info info;
  std::vector<int64_t> prompt;
  Printer stream;

  /// Decoded once into a buffer of a likely size; again only when it was
  /// too small (streaming decodes on every token).
  std::string text(const std::vector<int64_t> &ids) const {
    std::string out(ids.size() * 8 + 16, '\0');
    size_t length = 0;
    specrt_detokenize(model, ids.data(), ids.size(), out.data(), out.size(),
                      &length);
    if (length > out.size()) {
      out.resize(length);
      specrt_detokenize(model, ids.data(), ids.size(), out.data(), out.size(),
                        &length);
    }
    out.resize(length);
    return out;
  }

  /// The text the new tokens add to the prompt's. Decoded together: a
  /// tokenizer's decoder may treat a token differently at the start of a
  /// text (SentencePiece-style ones drop the first space).
  std::string continuation(const std::vector<int64_t> &generated) const {
    std::vector<int64_t> all = prompt;
    all.insert(all.end(), generated.begin(), generated.end());
    std::string whole = text(all), start = text(prompt);
    return whole.compare(0, start.size(), start) == 0 ? whole.substr(start.size())
                                                      : text(generated);
  }

  bool generate(bool speculative, Run &run, bool streamed);
};

/// The prompt's token ids: given, or the prompt text tokenized.
std::vector<int64_t> tokenizePrompt(const Options &o, specrt_model *model) {
  if (o.promptIds)
    return *o.promptIds;
  std::string text = o.prompt.value_or("");
  size_t count = 0;
  specrt_tokenize(model, text.data(), text.size(), 1, nullptr, 0, &count);
  std::vector<int64_t> prompt(count);
  specrt_tokenize(model, text.data(), text.size(), 1, prompt.data(),
                  prompt.size(), &count);
  return prompt;
}

/// Generates (after --warmup untimed runs) into `run`; `streamed` prints
/// the text as the rounds commit it.
bool Session::generate(bool speculative, Run &run, bool streamed) {
  specrt_generate_options g;
  specrt_generate_options_init(&g);
  g.max_new_tokens = o.maxNewTokens;
  g.seed = o.seed;
  g.speculative = speculative;
  g.stop_tokens = o.stopTokens.data();
  g.num_stop_tokens = o.stopTokens.size();
  g.temperature = o.temperature;
  g.top_k = o.topK;
  g.top_p = o.topP;
  for (int64_t i = 0; i < o.warmup; ++i) {
    if (specrt_generate(model, prompt.data(), prompt.size(), &g,
                        &run.stats) != SPECRT_OK)
      break; // the measured run reports the error
    specrt_result_free(&run.stats);
  }
  if (streamed) {
    std::fputs(text(prompt).c_str(), stdout);
    std::fflush(stdout);
    g.on_token = Printer::onToken;
    g.user_data = &stream;
  }
  if (specrt_generate(model, prompt.data(), prompt.size(), &g,
                      &run.stats) != SPECRT_OK) {
    std::fprintf(stderr, "spec-run: error: %s\n", specrt_last_error());
    return false;
  }
  run.tokens.assign(run.stats.tokens,
                    run.stats.tokens + run.stats.num_tokens);
  run.acceptedPerPosition.assign(run.stats.accepted_per_position,
                                 run.stats.accepted_per_position +
                                     run.stats.num_positions);
  run.roundsByFinalNode.assign(run.stats.rounds_by_final_node,
                               run.stats.rounds_by_final_node +
                                   run.stats.num_tree_rows);
  specrt_result_free(&run.stats); // the statistics stay; tokens are copied
  run.stats.num_tokens = run.tokens.size();
  return true;
}

/// --profile: the measured acceptance (and, with --compare, the costs) as
/// JSON for specc --profile, written whole or not at all.
bool writeProfile(const Session &session, const std::optional<Run> &speculative,
                  const std::optional<Run> &plain) {
  const Options &o = session.o;
  const specrt_model_info &info = session.info;
  if (!speculative) {
    std::fprintf(stderr, "spec-run: error: --profile measures speculation; "
                         "drop --no-speculation\n");
    return false;
  }
  const specrt_result &s = speculative->stats;
  // With --compare, the draft's (or MTP module's) steps and the verify
  // steps are measured against a plain target step: spec-choose-gamma's c
  // and v (per verified row after the first: a tree verifies a row per
  // candidate).
  std::string measured;
  std::string proposer = info.proposer;
  if (plain && s.rounds > 0 && plain->stats.rounds > 0) {
    double step = plain->stats.verify_seconds / plain->stats.rounds;
    double verifyStep = s.verify_seconds / s.rounds;
    double extraRows = static_cast<double>(
        info.tree_nodes ? static_cast<int64_t>(info.tree_nodes)
                        : info.proposals);
    char buffer[128];
    if ((proposer == "draft" || proposer == "mtp-module") &&
        s.propose_seconds > 0) {
      double draftStep = s.propose_seconds /
                         (s.rounds * static_cast<double>(info.proposals));
      std::snprintf(buffer, sizeof(buffer), ",\n  \"cost_ratio\": %.6f",
                    draftStep / step);
      measured = buffer;
    }
    std::snprintf(buffer, sizeof(buffer), ",\n  \"verify_cost\": %.6f",
                  std::max(0.0, (verifyStep / step - 1.0) / extraRows));
    measured += buffer;
  }
  // A tree's rounds by final node: specc --tree auto estimates each
  // candidate rank's acceptance per depth from them.
  if (info.tree_nodes > 0) {
    measured += ",\n  \"tree\": {\n    \"parents\": [" +
                formatIntegers(info.tree_parents, info.tree_nodes) +
                "],\n    \"ranks\": [" +
                formatIntegers(info.tree_ranks, info.tree_nodes) +
                "],\n    \"rounds_by_final_node\": [" +
                formatIntegers(speculative->roundsByFinalNode.data(),
                               speculative->roundsByFinalNode.size()) +
                "]\n  }";
  }
  std::string path = o.profile + ".partial";
  FILE *f = std::fopen(path.c_str(), "w");
  bool ok = f != nullptr;
  if (f) {
    ok = std::fprintf(
             f,
             "{\n  \"proposer\": %s,\n  \"proposals\": %lld,\n"
             "  \"new_tokens\": %zu,\n  \"target_forwards\": %lld,\n"
             "  \"mean_accepted_length\": %.6f,\n"
             "  \"acceptance_rate\": %.6f,\n"
             "  \"accepted_per_position\": [%s],\n"
             "  \"per_token_acceptance\": %.6f%s\n}\n",
             jsonString(info.proposer).c_str(),
             static_cast<long long>(info.proposals), s.num_tokens,
             static_cast<long long>(s.target_forwards),
             s.mean_accepted_length, s.acceptance_rate,
             formatList(speculative->acceptedPerPosition, "%.6f", ", ")
                 .c_str(),
             perTokenAcceptance(s.mean_accepted_length, info.proposals),
             measured.c_str()) > 0;
    ok = std::fclose(f) == 0 && ok;
  }
  if (!ok || std::rename(path.c_str(), o.profile.c_str()) != 0) {
    std::remove(path.c_str());
    std::fprintf(stderr, "spec-run: error: cannot write the profile '%s': %s\n",
                 o.profile.c_str(), std::strerror(errno));
    return false;
  }
  return true;
}

const char *const kStopReasons[] = {"max_new_tokens", "stop_token",
                                    "context_full", "cancelled"};

/// --json: the text, the tokens and the statistics of each run.
void printJson(const Session &session, const std::optional<Run> &speculative,
               const std::optional<Run> &plain) {
  const specrt_model_info &info = session.info;
  auto stats = [&](const Run &run, bool withAcceptance) {
    const specrt_result &s = run.stats;
    std::string out = "{\n    \"text\": " + jsonString(session.continuation(run.tokens));
    out += ",\n    \"token_ids\": [" +
           formatIntegers(run.tokens.data(), run.tokens.size()) + "]";
    char buffer[512];
    std::snprintf(
        buffer, sizeof(buffer),
        ",\n    \"new_tokens\": %zu,\n    \"stop_reason\": \"%s\",\n"
        "    \"target_forwards\": %lld,\n"
        "    \"tokens_per_target_forward\": %.6f,\n"
        "    \"seconds\": %.6f,\n    \"propose_seconds\": %.6f,\n"
        "    \"verify_seconds\": %.6f,\n    \"translate_seconds\": %.6f,\n"
        "    \"tokens_per_second\": %.3f",
        s.num_tokens, kStopReasons[s.stop_reason],
        static_cast<long long>(s.target_forwards), s.mean_accepted_length,
        s.seconds, s.propose_seconds, s.verify_seconds, s.translate_seconds,
        s.tokens_per_second);
    out += buffer;
    if (withAcceptance) {
      std::snprintf(buffer, sizeof(buffer),
                    ",\n    \"acceptance_rate\": %.6f", s.acceptance_rate);
      out += buffer;
      out += ",\n    \"accepted_per_position\": [" +
             formatList(run.acceptedPerPosition, "%.6f", ", ") + "]";
      if (!run.roundsByFinalNode.empty())
        out += ",\n    \"rounds_by_final_node\": [" +
               formatIntegers(run.roundsByFinalNode.data(),
                              run.roundsByFinalNode.size()) +
               "]";
    }
    return out + "\n  }";
  };
  std::string out = "{\n  \"proposer\": " + jsonString(info.proposer) +
                    ",\n  \"proposals\": " + std::to_string(info.proposals) +
                    ",\n  \"verify\": " + jsonString(info.verify);
  if (speculative)
    out += ",\n  \"speculative\": " + stats(*speculative, true);
  if (plain)
    out += ",\n  \"no_speculation\": " + stats(*plain, false);
  if (speculative && plain) {
    char buffer[128];
    std::snprintf(buffer, sizeof(buffer), ",\n  \"speedup\": %.6f",
                  plain->stats.seconds / speculative->stats.seconds);
    out += std::string(",\n  \"identical\": ") +
           (speculative->tokens == plain->tokens ? "true" : "false") +
           buffer;
  }
  std::printf("%s\n}\n", out.c_str());
}

/// The text (the rest of what was streamed) and each run's statistics.
void printText(const Session &session, const std::optional<Run> &speculative,
               const std::optional<Run> &plain, bool streaming) {
  const Run &shown = speculative ? *speculative : *plain;
  if (streaming) {
    // What the window held back at the end.
    std::string all = session.continuation(shown.tokens);
    if (all.compare(0, session.stream.printed.size(), session.stream.printed) == 0)
      std::fputs(all.c_str() + session.stream.printed.size(), stdout);
    std::printf("\n\n");
  } else {
    std::printf("%s%s\n\n", session.text(session.prompt).c_str(), session.continuation(shown.tokens).c_str());
  }
  auto report = [&](const char *name, const Run &run, bool withAcceptance) {
    const specrt_result &s = run.stats;
    std::printf("%s: %zu tokens in %lld target forwards (%.2f per forward",
                name, s.num_tokens, static_cast<long long>(s.target_forwards),
                s.mean_accepted_length);
    if (withAcceptance)
      std::printf(", acceptance rate %.2f", s.acceptance_rate);
    std::printf("), %.3f s, %.0f tokens/s\n", s.seconds, s.tokens_per_second);
    if (withAcceptance && !run.acceptedPerPosition.empty())
      std::printf("  accepted per position: %s\n",
                  formatList(run.acceptedPerPosition, "%.2f", " ").c_str());
    if (withAcceptance)
      std::printf("  time: propose %.3f s, verify %.3f s, prefill and "
                  "other %.3f s\n",
                  s.propose_seconds, s.verify_seconds,
                  s.seconds - s.propose_seconds - s.verify_seconds);
  };
  // An artifact compiled without a proposer has nothing to accept.
  bool proposes = session.info.proposals > 0;
  if (speculative)
    report(proposes ? "speculative" : "target alone (no proposer)",
           *speculative, proposes);
  if (plain)
    report("no speculation", *plain, false);
  if (speculative && plain)
    std::printf("speedup %.2fx; outputs %s\n",
                plain->stats.seconds / speculative->stats.seconds,
                speculative->tokens == plain->tokens ? "identical" : "differ");
}
} // namespace

int main(int argc, char **argv) {
  Options o;
  if (int rc = parseOptions(argc, argv, o); rc >= 0)
    return rc;

  specrt_open_options openOptions;
  specrt_open_options_init(&openOptions);
  openOptions.device = o.device;
  openOptions.threads = static_cast<int>(o.threads);
  specrt_model *model = nullptr;
  if (specrt_open(o.model.c_str(), &openOptions, &model) != SPECRT_OK) {
    std::fprintf(stderr, "spec-run: error: %s\n", specrt_last_error());
    return 1;
  }
  struct Closer {
    specrt_model *m;
    ~Closer() { specrt_close(m); }
  } closer{model};
  std::vector<int64_t> prompt = tokenizePrompt(o, model);
  // Streaming: the text each committed token adds, printed as the rounds
  // commit them (specrt::TextStream: decoded in a window of the last
  // tokens, held back inside a UTF-8 character).
  Session session{o, model, {}, prompt,
                  Printer{specrt::TextStream(model, prompt), {}}};
  specrt_get_model_info(model, &session.info);
  if (!o.profile.empty() && session.info.proposals == 0) {
    std::fprintf(stderr, "spec-run: error: --profile measures a proposer; "
                         "this artifact runs the target alone (compile it "
                         "with --draft or --mtp-head)\n");
    return 1;
  }
  bool streaming = !o.json && !o.noStream;

  std::optional<Run> speculative, plain;
  if (!o.noSpeculation) {
    speculative.emplace();
    if (!session.generate(true, *speculative, streaming))
      return 1;
  }
  if (o.noSpeculation || o.compare) {
    plain.emplace();
    if (!session.generate(false, *plain, streaming && o.noSpeculation))
      return 1;
  }
  if (!o.profile.empty() && !writeProfile(session, speculative, plain))
    return 1;
  if (o.json)
    printJson(session, speculative, plain);
  else
    printText(session, speculative, plain, streaming);
  return 0;
}
