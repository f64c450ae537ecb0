// Pure C++ throughput of sentencepiece 0.2.3 SentencePieceProcessor::Encode
// (single thread), same lines as bench.py.  Usage: bench_cc MODEL LINES_FILE
// LINES_FILE: lines separated by '\n' (already stripped/cleaned by bench.py).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
#include "sentencepiece_processor.h"
int main(int argc, char** argv) {
  sentencepiece::SentencePieceProcessor sp;
  auto st = sp.Load(argv[1]);
  if (!st.ok()) { fprintf(stderr, "%s\n", st.ToString().c_str()); return 1; }
  std::ifstream f(argv[2], std::ios::binary);
  std::stringstream ss; ss << f.rdbuf();
  std::vector<std::string> lines; std::string line;
  std::istringstream is(ss.str());
  while (std::getline(is, line)) lines.push_back(line);
  std::vector<double> rates; std::vector<int> ids; size_t tok = 0;
  for (int pass = 0; pass < 6; ++pass) {
    auto t0 = std::chrono::steady_clock::now(); tok = 0;
    for (const auto& l : lines) { sp.Encode(l, &ids); tok += ids.size(); }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (pass) rates.push_back(lines.size() / s);
  }
  std::sort(rates.begin(), rates.end());
  printf("%zu lines %zu tokens  median %.0f lines/s\n", lines.size(), tok, rates[2]);
}
