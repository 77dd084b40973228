// rewrite_launches IN.cu OUT.cc: the .cu file as host C++ for the emulator.
//
//   name<T><<<grid, block>>>(args)
//     -> ::cuda_emulator::launch("name<T>", [](const auto&... args) { name<T>(args...); }, grid, block)(args)
//
// The lambda calls the kernel as the launch would, deducing any template arguments left out.
// The .cuh headers (CUDA-only, so they may launch kernels too) are pasted in and rewritten with
// the file. Nothing else changes: the output starts with nvcc's implicit `#include
// <cuda_runtime.h>`, and #line directives keep compiler messages pointing at the original lines.
#include <algorithm>
#include <cctype>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>

namespace {

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }

// The start of the kernel expression that ends just before `end`: a name with optional template
// arguments, `ns::kernel<T, decltype(x)>`.
size_t kernel_start(const std::string& text, size_t end) {
  size_t i = end;
  while (i > 0 && std::isspace(static_cast<unsigned char>(text[i - 1]))) --i;
  if (i > 0 && text[i - 1] == '>') {
    int depth = 0;
    do {
      --i;
      if (text[i] == '>') ++depth;
      if (text[i] == '<') --depth;
    } while (depth > 0 && i > 0);
  }
  while (i > 0 && is_name_char(text[i - 1])) --i;
  return i;
}

// The expression on one line: its runs of whitespace as single spaces, none at the end.
std::string one_line(const std::string& expression) {
  std::string out;
  for (char c : expression) {
    const bool space = std::isspace(static_cast<unsigned char>(c));
    if (!space) out += c;
    if (space && !out.empty() && out.back() != ' ') out += ' ';
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string rewrite_launches(const std::string& text, const std::string& source_name) {
  std::string out;
  size_t copied = 0;
  for (size_t open = text.find("<<<"); open != std::string::npos; open = text.find("<<<", open + 3)) {
    const size_t close = text.find(">>>", open);
    const size_t start = kernel_start(text, open);
    if (close == std::string::npos || start < copied || start == open) {
      throw std::runtime_error(source_name + ": cannot parse the launch at offset " + std::to_string(open));
    }
    const std::string expression = text.substr(start, open - start), kernel = one_line(expression);
    out += text.substr(copied, start - copied);
    out += "::cuda_emulator::launch(\"" + kernel + "\", [](const auto&... args) { " + kernel + "(args...); }, ";
    out += std::string(std::count(expression.begin(), expression.end(), '\n'), '\n');
    out += text.substr(open + 3, close - open - 3) + ")";
    copied = close + 3;
  }
  return out + text.substr(copied);
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) throw std::runtime_error("cannot read " + path);
  return text.str();
}

// The file with each `#include "....cuh"` replaced by that header, expanded in turn, the first
// time it is included (they are all #pragma once). #line directives keep every line's origin.
std::string expand_cuda_headers(const std::string& path, std::set<std::string>& included) {
  std::istringstream lines(read(path));
  std::string out, line;
  for (int number = 1; std::getline(lines, line); ++number) {
    const size_t quote = line.find('"');
    const bool cuda_header = line.rfind("#include \"", 0) == 0 && line.find(".cuh\"") != std::string::npos;
    if (line == "#pragma once") {
      out += "\n";
    } else if (cuda_header) {
      const std::string header = line.substr(quote + 1, line.find('"', quote + 1) - quote - 1);
      if (included.insert(header).second) {
        out += "#line 1 \"" + header + "\"\n" + expand_cuda_headers(header, included);
      }
      out += "#line " + std::to_string(number + 1) + " \"" + path + "\"\n";
    } else {
      out += line + "\n";
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: rewrite_launches IN.cu OUT.cc (run where IN.cu's includes resolve)\n";
    return 2;
  }
  try {
    std::set<std::string> included;
    const std::string source = expand_cuda_headers(argv[1], included);
    std::ofstream out(argv[2]);
    out << "#include <cuda_runtime.h>  // as nvcc includes it, implicitly\n";
    out << "#line 1 \"" << argv[1] << "\"\n" << rewrite_launches(source, argv[1]);
    if (!out) throw std::runtime_error(std::string("cannot write ") + argv[2]);
  } catch (const std::exception& e) {
    std::cerr << "rewrite_launches: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
