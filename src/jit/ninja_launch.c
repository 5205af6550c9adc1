/*
 * Starts a build tool for tvm_ffi.cpp (python/tvm_ffi/cpp/_build.py):
 *
 *   ninja_launch PARENT_PID DIR_FD TOOL [ARG...]
 *
 * The tool is ended (SIGTERM) when the process that builds dies, and starts in the build
 * directory it was handed as an open descriptor (never a path another process could swap).
 * A Python interpreter does the same in about 15 ms more per build step; this is what the
 * package build leaves in tvm_ffi/lib/jit/.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s PARENT_PID DIR_FD TOOL [ARG...]\n", argv[0]);
    return 2;
  }
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  /* The parent may have died before the line above: then nobody waits for the tool. */
  if (getppid() != (pid_t)strtol(argv[1], NULL, 10)) return 1;
  int dir_fd = (int)strtol(argv[2], NULL, 10);
  if (fchdir(dir_fd) != 0) {
    perror("ninja_launch: fchdir to the build directory");
    return 1;
  }
  close(dir_fd);
  execv(argv[3], argv + 3);
  fprintf(stderr, "ninja_launch: cannot run ");
  perror(argv[3]);
  return 127;
}
