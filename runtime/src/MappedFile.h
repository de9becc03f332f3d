//===- MappedFile.h - a file mapped read-only --------------------*- C++ -*-===//

#ifndef SPECRT_MAPPEDFILE_H
#define SPECRT_MAPPEDFILE_H

#include <cerrno>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace specrt {

/// A whole file mapped read-only and private; unmapped on destruction.
class MappedFile {
public:
  MappedFile() = default;
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;
  ~MappedFile() {
    if (data_ && size_)
      munmap(data_, size_);
  }

  /// Maps `path`; on failure returns false with `error` set.
  bool open(const std::string &path, std::string &error) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      error = "cannot open '" + path + "': " + std::strerror(errno);
      return false;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      error = "'" + path + "' is not a regular file";
      close(fd);
      return false;
    }
    size_ = static_cast<size_t>(st.st_size);
    if (size_ > 0) {
      void *p = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        error = "cannot map '" + path + "': " + std::strerror(errno);
        size_ = 0;
        close(fd);
        return false;
      }
      data_ = p;
    }
    close(fd);
    return true;
  }

  const void *data() const { return data_; }
  size_t size() const { return size_; }

private:
  void *data_ = nullptr;
  size_t size_ = 0;
};

} // namespace specrt

#endif // SPECRT_MAPPEDFILE_H
