#include "cli/cli.h"

int main(int argc, char** argv) { return gpurent::cli::main(argc, argv); }
