// report.html from a replay.json, for the browser test (test/integration/test_replay_report.py):
//   render_report REPLAY.json OUT.html [OTHER.json FILE OTHER_FILE]
// With OTHER.json, the page compares the two (replay/compare.h), FILE and OTHER_FILE naming them.
// Test infrastructure: `dynamic-scheduler replay` writes the same page from the same functions.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "replay/compare.h"
#include "replay/report_html.h"

namespace {

bool Read(const char* path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  *out = s.str();
  return static_cast<bool>(in);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && argc != 6) {
    std::cerr << "usage: render_report REPLAY.json OUT.html [OTHER.json FILE OTHER_FILE]\n";
    return 2;
  }
  std::string doc;
  if (!Read(argv[1], &doc)) {
    std::cerr << argv[1] << ": cannot read\n";
    return 1;
  }
  if (argc == 6) {
    std::string other;
    if (!Read(argv[3], &other)) {
      std::cerr << argv[3] << ": cannot read\n";
      return 1;
    }
    auto both = ds::AddCompare(doc, argv[4], other, argv[5]);
    if (!both.ok()) {
      std::cerr << both.status().ToString() << "\n";
      return 1;
    }
    doc = std::move(*both);
  }
  auto html = ds::RenderReportHtml(doc);
  if (!html.ok()) {
    std::cerr << html.status().ToString() << "\n";
    return 1;
  }
  std::ofstream(argv[2], std::ios::binary) << *html;
  return 0;
}
