// Prints the predicted-beside-published table of docs/validation.md:
//   ./build/tests/emulator/cli/validation_report
#include <iostream>

#include "tests/emulator/cli/validation.h"

int main() {
  std::cout << myriad::reference::ValidationTable();
  return 0;
}
