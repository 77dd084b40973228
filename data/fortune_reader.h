// Running English text from fortune files (Debian's `fortunes` package): each file holds
// fortunes separated by lines holding only `%`, and each fortune is read as one document.
// Terminal overstriking is resolved (a backspace erases the byte before it, as a terminal
// shows it) and other control bytes except newline and tab are dropped; all other bytes,
// UTF-8 included, are kept. Missing, unreadable or empty files throw fuselab::Error naming
// the file.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace fuselab {

// Where Debian's fortunes and fortunes-min packages put their files.
inline constexpr const char* kFortuneFolder = "/usr/share/games/fortunes";

// The fortune text files in `folder`, sorted by name: regular files and symbolic links to them,
// each file once (the `.u8` links beside Debian's files are the same files again, and a link to
// a file already listed is left out); subfolders (the rot13 `off/` of fortunes-off), links to
// anything but a regular file and the `.dat` index files are left out.
std::vector<std::string> fortune_files(const std::string& folder = kFortuneFolder);

// The text as a terminal shows it: overstriking resolved, control bytes but '\n' and '\t' dropped.
std::string printable_text(std::string_view raw);

// The documents of `text`: the runs of lines between `%` lines, each line ending in '\n';
// documents that are blank (only spaces, tabs and newlines) are skipped.
std::vector<std::string> split_fortunes(std::string_view text);

// The documents of each file in turn. Throws naming the file when it is missing, unreadable or
// holds no document.
std::vector<std::string> read_fortunes(const std::vector<std::string>& paths);

}  // namespace fuselab
