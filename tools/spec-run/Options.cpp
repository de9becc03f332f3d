//===- Options.cpp - spec-run's command line ------------------------------===//

#include "tools/spec-run/Options.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <sys/stat.h>

using namespace specrun;

namespace {
const char *kUsage =
    "usage: spec-run MODEL.spec [options]\n"
    "\n"
    "Generates text with a speculative decoder compiled by specc (an\n"
    "artifact directory) and prints the text and the statistics.\n"
    "\n"
    "options:\n"
    "  --prompt TEXT          the prompt (BOS first, then the artifact's\n"
    "                         tokenizer.json's tokens, or its bytes)\n"
    "  --prompt-file FILE     the prompt, read from a file\n"
    "  --prompt-ids IDS       the prompt as comma-separated token ids\n"
    "  --max-new-tokens N     tokens to generate at most (default 128)\n"
    "  --seed S               key of the sampler, for sampling artifacts\n"
    "                         (0 to 2^64-1, or -1 for 2^64-1 and so on;\n"
    "                         default 0; a seeded run reproduces exactly)\n"
    "  --stop-token ID        stop after this token as well as EOS; repeat\n"
    "  --temperature T, --top-k K, --top-p P\n"
    "                         sampling settings; they are compiled into the\n"
    "                         artifact, so they must match it (specc\n"
    "                         --sampling --temperature T)\n"
    "  --no-speculation       run the target alone, with the same kernels\n"
    "  --compare              run with and without speculation; report the\n"
    "                         speedup and whether the outputs are identical\n"
    "  --warmup N             generate N times untimed before each measured\n"
    "                         run (default 0; 1 with --compare, so that\n"
    "                         neither mode pays the first run's page faults)\n"
    "  --threads N            CPU threads for the compiled code's parallel\n"
    "                         loops (default: all cores, or OMP_NUM_THREADS);\n"
    "                         outputs are identical for any N\n"
    "  --json                 print JSON instead of text\n"
    "  --no-stream            print the text when generation ends, not as\n"
    "                         the rounds commit tokens\n"
    "  --profile FILE         write the measured acceptance as JSON, for\n"
    "                         specc --profile (gamma, MTP depth or a Medusa\n"
    "                         tree from the cost model); a tree decoder's\n"
    "                         rounds by the node they ended at; with\n"
    "                         --compare, also the cost of each verified\n"
    "                         position and of a draft's (or MTP module's)\n"
    "                         step, in target steps\n"
    "  --device cpu|cuda      the device to run on (default: the one the\n"
    "                         artifact was compiled for)\n"
    "  --help                 this text\n";



bool parseInteger(const std::string &text, int64_t &value) {
  if (text.empty())
    return false;
  errno = 0;
  char *end = nullptr;
  long long parsed = std::strtoll(text.c_str(), &end, 10);
  if (errno || *end)
    return false;
  value = parsed;
  return true;
}

/// A finite number (strtod would also take nan and inf).
bool parseNumber(const std::string &text, double &value) {
  if (text.empty())
    return false;
  errno = 0;
  char *end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return !errno && !*end && std::isfinite(value);
}

/// A 64-bit key: 0 to 2^64-1, or a negative number down to -2^63 for the
/// same bits in two's complement (-1 is 2^64-1).
bool parseSeed(const std::string &text, uint64_t &value) {
  int64_t negative;
  if (!text.empty() && text[0] == '-') {
    if (!parseInteger(text, negative))
      return false;
    value = static_cast<uint64_t>(negative);
    return true;
  }
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0])))
    return false;
  errno = 0;
  char *end = nullptr;
  unsigned long long parsed = std::strtoull(text.c_str(), &end, 10);
  if (errno || *end)
    return false;
  value = parsed;
  return true;
}

/// Reads a prompt file: a regular file, a pipe or a terminal (not a
/// directory), of at most kMaxPromptBytes; on failure returns false with
/// `why` set.
constexpr size_t kMaxPromptBytes = 64 << 20;
bool readPromptFile(const std::string &path, std::string &text,
                    std::string &why) {
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f) {
    why = std::strerror(errno);
    return false;
  }
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || S_ISDIR(st.st_mode)) {
    why = "it is a directory";
    std::fclose(f);
    return false;
  }
  char buffer[65536];
  for (size_t n; (n = std::fread(buffer, 1, sizeof(buffer), f)) > 0;) {
    if (text.size() + n > kMaxPromptBytes) {
      why = "it is larger than " + std::to_string(kMaxPromptBytes) + " bytes";
      std::fclose(f);
      return false;
    }
    text.append(buffer, n);
  }
  bool ok = !std::ferror(f);
  if (!ok)
    why = std::strerror(errno);
  std::fclose(f);
  return ok;
}

} // namespace

int specrun::usageError(const std::string &message) {
  std::fprintf(stderr, "spec-run: error: %s\n(see spec-run --help)\n",
               message.c_str());
  return 2;
}

namespace {
/// --prompt-ids' comma-separated token ids; false with `bad` the item that
/// is not one.
bool parseIds(const std::string &text, std::vector<int64_t> &ids,
              std::string &bad) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma - start);
    int64_t id;
    if (!parseInteger(item, id)) {
      bad = item;
      return false;
    }
    ids.push_back(id);
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  return true;
}

bool takesValue(const std::string &arg) {
  for (const char *option :
       {"--prompt", "--prompt-file", "--prompt-ids", "--max-new-tokens",
        "--seed", "--stop-token", "--top-k", "--warmup", "--threads",
        "--temperature", "--top-p", "--profile", "--device"})
    if (arg == option)
      return true;
  return false;
}

/// An integer option's value into `o`; -1, or a usage error's status.
int applyIntegerOption(const std::string &arg, const std::string &value,
                       Options &o) {
  int64_t n;
  if (!parseInteger(value, n))
    return usageError(arg + ": '" + value + "' is not an integer");
  if ((arg == "--top-k" || arg == "--warmup") && n < 0)
    return usageError(arg + ": '" + value + "' is negative");
  if (arg == "--threads" && (n < 1 || n > 4096))
    return usageError("--threads: '" + value +
                      "' is not a thread count from 1 to 4096");
  if (arg == "--max-new-tokens")
    o.maxNewTokens = n;
  else if (arg == "--stop-token")
    o.stopTokens.push_back(n);
  else if (arg == "--warmup")
    o.warmup = n;
  else if (arg == "--threads")
    o.threads = n;
  else
    o.topK = n;
  return -1;
}

/// An option with a value (takesValue) into `o`; -1, or a usage error's
/// status.
int applyValueOption(const std::string &arg, const std::string &value,
                     Options &o) {
  if (arg == "--prompt" || arg == "--prompt-file") {
    std::string text, why;
    if (arg == "--prompt")
      text = value;
    else if (!readPromptFile(value, text, why))
      return usageError("cannot read the prompt file '" + value + "': " + why);
    if (o.prompt)
      return usageError("give one of --prompt and --prompt-file");
    o.prompt = text;
  } else if (arg == "--prompt-ids") {
    std::vector<int64_t> ids;
    std::string bad;
    if (!parseIds(value, ids, bad))
      return usageError("--prompt-ids: '" + bad + "' is not a token id");
    o.promptIds = ids;
  } else if (arg == "--seed") {
    if (!parseSeed(value, o.seed))
      return usageError("--seed: '" + value +
                        "' is not a 64-bit integer (0 to "
                        "18446744073709551615, or -9223372036854775808 "
                        "to -1 for the same bits)");
  } else if (arg == "--temperature" || arg == "--top-p") {
    double x;
    if (!parseNumber(value, x) || x < 0)
      return usageError(arg + ": '" + value +
                        "' is not a finite non-negative number");
    (arg == "--temperature" ? o.temperature : o.topP) = x;
  } else if (arg == "--profile") {
    o.profile = value;
  } else if (arg == "--device") {
    if (value == "cpu")
      o.device = SPECRT_DEVICE_CPU;
    else if (value == "cuda")
      o.device = SPECRT_DEVICE_CUDA;
    else
      return usageError("--device: '" + value + "'; expected cpu or cuda");
  } else {
    return applyIntegerOption(arg, value, o);
  }
  return -1;
}
} // namespace

int specrun::parseOptions(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool hasValue = false;
    size_t eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      hasValue = true;
    }
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (takesValue(arg)) {
      if (!hasValue && i + 1 >= argc)
        return usageError("option " + arg + " needs a value");
      if (int rc = applyValueOption(arg, hasValue ? value : argv[++i], o);
          rc >= 0)
        return rc;
    } else if (arg == "--no-speculation") {
      o.noSpeculation = true;
    } else if (arg == "--compare") {
      o.compare = true;
    } else if (arg == "--no-stream") {
      o.noStream = true;
    } else if (arg == "--json") {
      o.json = true;
    } else if (arg.rfind("-", 0) == 0 && arg != "-") {
      return usageError("unknown option '" + arg + "'");
    } else if (o.model.empty()) {
      o.model = arg;
    } else {
      return usageError("more than one model given ('" + o.model + "', '" +
                        arg + "')");
    }
  }
  if (o.model.empty())
    return usageError("no model given");
  if (o.prompt && o.promptIds)
    return usageError("give a prompt as text or as ids, not both");
  if (o.noSpeculation && o.compare)
    return usageError("--compare already runs without speculation");
  if (o.warmup < 0)
    o.warmup = o.compare ? 1 : 0;
  return -1;
}
