//===- ManifestFuzzer.cpp - libFuzzer target: the artifact opener ---------===//
//
// Writes each input as manifest.json into an artifact directory and opens it
// with specrt_open, as spec-run does: the manifest reader, the JSON parser,
// and, when SPECULA_FUZZ_ARTIFACT names a compiled artifact (its decoder.so
// and weights.bin are linked into the directory), the checks of the files,
// the mapping, the library and its facts. Nothing is run. Any input may be
// refused; none may crash.
//
//===----------------------------------------------------------------------===//

#include "specrt/artifact_format.h"
#include "specrt/specrt.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include <unistd.h>

static std::string directory;

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  char pattern[] = "/tmp/specula-manifest-fuzz-XXXXXX";
  if (!mkdtemp(pattern)) {
    std::perror("mkdtemp");
    std::abort();
  }
  directory = pattern;
  if (const char *artifact = std::getenv("SPECULA_FUZZ_ARTIFACT"))
    for (const char *file : {SPECRT_LIBRARY_FILE, SPECRT_WEIGHTS_FILE}) {
      std::string from = std::string(artifact) + "/" + file;
      std::string to = directory + "/" + file;
      if (symlink(from.c_str(), to.c_str()) != 0) {
        std::perror(from.c_str());
        std::abort();
      }
    }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path = directory + "/" SPECRT_MANIFEST_FILE;
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(data, 1, size, f) != size || std::fclose(f) != 0)
    std::abort();
  specrt_open_options options;
  specrt_open_options_init(&options);
  // Checksumming the weights would dominate every run; the sizes and the
  // library's facts are still checked.
  options.verify_checksums = 0;
  specrt_model *model = nullptr;
  if (specrt_open(directory.c_str(), &options, &model) == SPECRT_OK) {
    specrt_model_info info;
    specrt_get_model_info(model, &info);
    specrt_close(model);
  }
  return 0;
}
