//===- ServerTest.cpp - spec-serve's request parsing, metrics, scheduler --===//
//
// The parts of the server below HTTP: OpenAI requests read and refused,
// Prometheus histograms, the text of streamed tokens with stop strings, and
// the scheduler on the example draft decoder the tests share
// (test/CMakeLists.txt): slots side by side give each sequence its tokens
// alone, cancellation stops a generation early, a full queue refuses, a
// drained scheduler admits nothing.
//
//===----------------------------------------------------------------------===//

#include "specserve/Completions.h"
#include "specserve/Metrics.h"
#include "specserve/Scheduler.h"
#include "specrt/TextStream.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

using namespace specserve;

namespace {
ModelLimits exampleLimits() {
  ModelLimits limits;
  limits.name = "m";
  limits.vocabSize = 259;
  limits.contextCapacity = 512;
  return limits;
}

std::string refusal(const std::string &body) {
  ApiError error;
  EXPECT_FALSE(parseCompletionRequest(body, exampleLimits(), error)) << body;
  return std::to_string(error.status) + " " + error.param + ": " + error.message;
}

TEST(CompletionRequestTest, ReadsWhatOpenAIClientsSend) {
  ApiError error;
  auto r = parseCompletionRequest(
      R"({"model": "m", "prompt": "hi", "max_tokens": 5, "seed": -1,
          "stop": ["a", "b"], "stream": true,
          "stream_options": {"include_usage": true}, "temperature": 0,
          "top_p": 1, "n": 1, "echo": false, "user": "someone"})",
      exampleLimits(), error);
  ASSERT_TRUE(r) << error.message;
  EXPECT_EQ(*r->promptText, "hi");
  EXPECT_EQ(r->maxTokens, 5);
  EXPECT_EQ(r->seed, ~uint64_t{0});
  EXPECT_EQ(r->stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(r->stream && r->includeUsage);
  auto ids = parseCompletionRequest(R"({"prompt": [[256, 104]]})",
                                    exampleLimits(), error);
  ASSERT_TRUE(ids);
  EXPECT_EQ(ids->promptIds, (std::vector<int64_t>{256, 104}));
  EXPECT_EQ(ids->maxTokens, 16); // OpenAI's default
}

TEST(CompletionRequestTest, RefusesNamingTheField) {
  EXPECT_EQ(refusal("{"), "400 : the request body is not valid JSON");
  EXPECT_EQ(refusal(R"({"prompt": "x", "max_tokens": 0})"),
            "400 max_tokens: 'max_tokens' must be at least 1");
  EXPECT_EQ(refusal(R"({"prompt": "x", "stream": "yes"})"),
            "400 stream: 'stream' must be a boolean, not string");
  EXPECT_EQ(refusal(R"({"prompt": [1, 2.5]})"),
            "400 prompt: 'prompt' token 1 must be an integer, not number");
  EXPECT_EQ(refusal(R"({"prompt": []})"),
            "400 prompt: 'prompt' must be a string or a non-empty array of "
            "token ids, not an empty array");
  EXPECT_EQ(refusal(R"({"prompt": "x", "stop": ["a", "b", "c", "d", "e"]})"),
            "400 stop: 'stop' holds 5 strings; at most 4 are allowed");
  EXPECT_EQ(refusal(R"({"prompt": "x", "stream_options": {}})"),
            "400 stream_options: 'stream_options' is only allowed with "
            "stream: true");
  EXPECT_EQ(refusal(R"({"prompt": "x", "top_p": 0.9})"),
            "400 top_p: top_p 0.9 requested; this model is compiled with "
            "top_p 1; sampling settings are compiled into the artifact "
            "(specc --sampling --temperature T --top-p P)");
  EXPECT_EQ(refusal(R"({"prompt": "x", "logprobs": 2})"),
            "400 logprobs: 'logprobs' = 2 is not supported by this server");
  EXPECT_EQ(refusal(R"({"prompt": "x", "model": "other"})"),
            "404 model: the model 'other' does not exist; this server serves "
            "'m'");
}

TEST(CompletionRequestTest, PromptLength) {
  EXPECT_FALSE(checkPromptLength(511, exampleLimits()));
  EXPECT_EQ(checkPromptLength(512, exampleLimits())->message,
            "this model's context holds 512 tokens; the prompt has 512 (at "
            "most 511, to leave room for one generated token)");
  EXPECT_TRUE(checkPromptLength(0, exampleLimits()));
}

TEST(MetricsTest, HistogramBucketsAreCumulative) {
  Histogram h({0.1, 1});
  for (double v : {0.05, 0.1, 0.5, 2.0})
    h.observe(v);
  std::string out;
  h.render("x", "help", out);
  EXPECT_NE(out.find("x_bucket{le=\"0.1\"} 2\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_bucket{le=\"1\"} 3\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_bucket{le=\"+Inf\"} 4\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_sum 2.65\nx_count 4\n"), std::string::npos) << out;
}

TEST(MetricsTest, SpeculationSeries) {
  Metrics metrics;
  SequenceStats stats;
  stats.targetForwards = 5;
  stats.rounds = 4;
  stats.proposals = 2;
  stats.acceptedPerPosition = {0.75, 0.5};
  metrics.countFinished(Finish::Length, stats);
  std::string out = metrics.render({});
  EXPECT_NE(out.find("specula_accepted_rounds_total{position=\"1\"} 3\n"),
            std::string::npos);
  EXPECT_NE(out.find("specula_accepted_rounds_total{position=\"2\"} 2\n"),
            std::string::npos);
  EXPECT_NE(out.find("specula_speculation_length_rounds_total{length=\"2\"} 4\n"),
            std::string::npos);
  EXPECT_NE(out.find("specula_sequences_total{finish=\"length\"} 1\n"),
            std::string::npos);
}

/// The example decoder the tests share, opened once.
class SchedulerTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    specrt_open_options options;
    specrt_open_options_init(&options);
    options.threads = 1;
    ASSERT_EQ(specrt_open(SPECULA_TEST_ARTIFACTS "/draft-gamma2.spec", &options,
                          &model),
              SPECRT_OK)
        << specrt_last_error();
  }
  static void TearDownTestSuite() { specrt_close(model); }

  static std::vector<int64_t> prompt(const std::string &text) {
    std::vector<int64_t> ids{256};
    for (unsigned char c : text)
      ids.push_back(c);
    return ids;
  }
  static std::shared_ptr<Sequence> sequence(const std::string &text,
                                            int64_t maxTokens) {
    SequenceRequest request;
    request.prompt = prompt(text);
    request.maxTokens = maxTokens;
    return std::make_shared<Sequence>(request);
  }
  static Sequence::Progress wait(Sequence &s) {
    std::vector<int64_t> tokens;
    for (;;) {
      Sequence::Progress p = s.waitPast(tokens.size(), std::chrono::seconds(1));
      tokens.insert(tokens.end(), p.tokens.begin(), p.tokens.end());
      if (p.finish != Finish::Running) {
        p.tokens = tokens;
        return p;
      }
    }
  }

  static specrt_model *model;
  Metrics metrics;
};
specrt_model *SchedulerTest::model = nullptr;

const char *kPrompts[] = {"def __init__(self, name):", "class Parser:",
                          "import os\n", "for i in range(", "return self.",
                          "with open(", "x = [", "while True:"};

TEST_F(SchedulerTest, SlotsSideBySideGiveEachSequenceItsTokensAlone) {
  std::vector<std::vector<int64_t>> alone;
  {
    Scheduler one(model, {1, 64, true, {}}, metrics);
    for (const char *text : kPrompts) {
      auto s = sequence(text, 40);
      ASSERT_EQ(one.submit(s), Scheduler::Admission::Accepted);
      alone.push_back(wait(*s).tokens);
    }
  }
  Scheduler four(model, {4, 64, true, {}}, metrics);
  std::vector<std::shared_ptr<Sequence>> together;
  for (const char *text : kPrompts) {
    together.push_back(sequence(text, 40));
    ASSERT_EQ(four.submit(together.back()), Scheduler::Admission::Accepted);
  }
  for (size_t i = 0; i < together.size(); ++i) {
    Sequence::Progress p = wait(*together[i]);
    EXPECT_EQ(p.finish, Finish::Length);
    EXPECT_EQ(p.tokens, alone[i]) << kPrompts[i];
  }
}

TEST_F(SchedulerTest, CancelStopsTheLoopEarly) {
  Scheduler scheduler(model, {1, 64, true, std::chrono::milliseconds(2)},
                      metrics);
  auto s = sequence("class Parser:", 400);
  ASSERT_EQ(scheduler.submit(s), Scheduler::Admission::Accepted);
  ASSERT_FALSE(s->waitPast(0, std::chrono::seconds(60)).tokens.empty());
  s->cancel();
  Sequence::Progress p = wait(*s);
  EXPECT_EQ(p.finish, Finish::Cancelled);
  EXPECT_LT(p.tokens.size(), 100u);
}

TEST_F(SchedulerTest, FullQueueAndDrain) {
  Scheduler scheduler(model, {1, 1, true, std::chrono::milliseconds(5)},
                      metrics);
  auto running = sequence("a", 30), waiting = sequence("b", 2);
  ASSERT_EQ(scheduler.submit(running), Scheduler::Admission::Accepted);
  running->waitPast(0, std::chrono::seconds(60)); // it left the queue
  ASSERT_EQ(scheduler.submit(waiting), Scheduler::Admission::Accepted);
  EXPECT_EQ(scheduler.submit(sequence("c", 2)), Scheduler::Admission::QueueFull);
  EXPECT_EQ(scheduler.gauges().queued, 1u);
  EXPECT_TRUE(scheduler.drain(Clock::now() + std::chrono::seconds(60)));
  EXPECT_EQ(wait(*running).tokens.size(), 30u);
  EXPECT_EQ(wait(*waiting).tokens.size(), 2u);
  EXPECT_EQ(scheduler.submit(sequence("d", 2)), Scheduler::Admission::Stopping);
}

TEST_F(SchedulerTest, TextStreamCutsAtStopStringsAcrossPieces) {
  // Fed one byte-level token at a time, "ab|cd" must hold back "c" until
  // it knows whether "cd" follows.
  auto feed = [&](const std::string &text, std::vector<std::string> stops,
                  std::vector<std::string> &pieces) {
    specrt::TextStream stream(model, prompt("p"), std::move(stops));
    std::string whole;
    for (unsigned char c : text) {
      pieces.push_back(stream.push(c));
      whole += pieces.back();
    }
    whole += stream.finish();
    return whole;
  };
  std::vector<std::string> pieces;
  EXPECT_EQ(feed("abcdef", {"cd"}, pieces), "ab");
  EXPECT_EQ(pieces, (std::vector<std::string>{"a", "b", "", "", "", ""}));
  pieces.clear();
  EXPECT_EQ(feed("abcef", {"cd"}, pieces), "abcef");
  EXPECT_EQ(pieces[2], "");   // "c" held back
  EXPECT_EQ(pieces[3], "ce"); // released with the next
  pieces.clear();
  EXPECT_EQ(feed("abc", {"cd"}, pieces), "abc"); // released at the end
  pieces.clear();
  // A two-byte character arrives whole, not as its first byte.
  EXPECT_EQ(feed("\xC3\xA9t", {}, pieces), "\xC3\xA9t");
  EXPECT_EQ(pieces, (std::vector<std::string>{"", "\xC3\xA9", "t"}));
}
} // namespace
