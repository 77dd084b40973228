#include "data/fortune_reader.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "tensor/error.h"

namespace fuselab {
namespace {

bool is_blank(std::string_view text) { return text.find_first_not_of(" \t\n") == std::string_view::npos; }

std::string install_hint(const std::string& path) {
  return path.rfind(kFortuneFolder, 0) == 0 ? " (apt-get install fortunes, or bash tools/setup.sh)" : "";
}

std::string read_file(const std::string& path) {
  namespace fs = std::filesystem;
  check(fs::exists(path), "read_fortunes ", path, ": no such file", install_hint(path));
  check(!fs::is_directory(path), "read_fortunes ", path, ": is a folder; list its files with fortune_files()");
  std::ifstream file(path, std::ios::binary);
  check(file.good(), "read_fortunes ", path, ": cannot open it for reading");
  std::ostringstream contents;
  contents << file.rdbuf();
  check(!file.bad(), "read_fortunes ", path, ": reading it failed");
  return contents.str();
}

}  // namespace

std::vector<std::string> fortune_files(const std::string& folder) {
  namespace fs = std::filesystem;
  check(fs::is_directory(folder), "fortune_files ", folder, ": no such folder", install_hint(folder));
  std::vector<std::string> entries, paths;
  for (const fs::directory_entry& entry : fs::directory_iterator(folder)) {
    // is_regular_file follows a link: a link to a fortune file is one, a dangling link is not.
    if (entry.is_regular_file() && entry.path().extension() != ".dat") entries.push_back(entry.path().string());
  }
  std::sort(entries.begin(), entries.end());
  std::set<fs::path> files;  // each file once, by the path it resolves to; the first name in order wins
  for (const std::string& entry : entries) {
    if (files.insert(fs::canonical(entry)).second) paths.push_back(entry);
  }
  check(!paths.empty(), "fortune_files ", folder, ": holds no fortune files", install_hint(folder));
  return paths;
}

std::string printable_text(std::string_view raw) {
  std::string text;
  text.reserve(raw.size());
  for (const char c : raw) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\b') {  // overstrike: "_\bI" is an underlined I, so the I is what stays
      if (!text.empty() && text.back() != '\n') text.pop_back();
    } else if (c == '\n' || c == '\t' || (byte >= 0x20 && byte != 0x7f)) {
      text += c;
    }
  }
  return text;
}

std::vector<std::string> split_fortunes(std::string_view text) {
  std::vector<std::string> documents;
  std::string document;
  auto finish = [&] {
    if (!is_blank(document)) documents.push_back(document);
    document.clear();
  };
  size_t begin = 0;
  while (begin < text.size()) {
    const size_t end = std::min(text.find('\n', begin), text.size());
    const std::string_view line = text.substr(begin, end - begin);
    if (line == "%") {
      finish();
    } else {
      document.append(line).push_back('\n');
    }
    begin = end + 1;
  }
  finish();
  return documents;
}

std::vector<std::string> read_fortunes(const std::vector<std::string>& paths) {
  check(!paths.empty(), "read_fortunes: no files given");
  std::vector<std::string> documents;
  for (const std::string& path : paths) {
    std::vector<std::string> file_documents = split_fortunes(printable_text(read_file(path)));
    check(!file_documents.empty(), "read_fortunes ", path,
          ": holds no documents (fortunes separated by lines holding only %)");
    documents.insert(documents.end(), std::make_move_iterator(file_documents.begin()),
                     std::make_move_iterator(file_documents.end()));
  }
  return documents;
}

}  // namespace fuselab
