// Prints the size of the image embedded in this executable.
#include <cstddef>
#include <cstdio>

extern "C" size_t probe_image_size();

int main() {
  std::printf("%zu\n", probe_image_size());
  return 0;
}
