/* A C program against the installed libptxdsl.so (ptxdsl::c): the header and the library agree on
 * the version, and a call answers with a status (without a driver: PTXDSL_ERROR_NO_DRIVER). */
#include <stdio.h>

#include <ptxdsl/ptxdsl.h>

int main(void) {
  const int32_t status = ptxdsl_init();
  if (ptxdsl_version() != PTXDSL_VERSION) {
    fprintf(stderr, "libptxdsl %d, header %d\n", (int)ptxdsl_version(), PTXDSL_VERSION);
    return 1;
  }
  printf("ptxdsl C ABI %d: %s %s\n", (int)ptxdsl_version(), ptxdsl_status_name(status),
         ptxdsl_last_error());
  return status == PTXDSL_SUCCESS || status == PTXDSL_ERROR_NO_DRIVER ? 0 : 1;
}
