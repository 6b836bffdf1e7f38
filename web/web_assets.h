// The live web page at "/": its HTML, CSS and JavaScript (web/assets/), embedded in the binary at
// build time by cmake/embed_assets.cmake so that it works on an air-gapped cluster (no CDN, no
// external script or font) and needs no file installed beside the binary. The page polls
// GET /api/v1/state every 3 s while it is visible (and GET /rebalance when rebalancing is on) and
// redraws: every managed node with its value per rule against the thresholds, its mark and since
// when, capped and held nodes, the recent mark changes with their reasons, the leader, the outage
// and reload state, evictions and the effect figures. It filters, sorts and pages on the client:
// at 10,000 nodes a refresh or a sort takes milliseconds (test/integration/test_web.py measures
// it), because only one page of rows is ever in the DOM. Text from the cluster enters the page
// only through textContent, never as HTML; the responses carry a Content-Security-Policy that
// allows only the page's own script and requests to this server.
#pragma once

#include <string_view>

namespace ds {

struct WebAsset {
  std::string_view path;  // "/", "/ui/app.js", "/ui/app.css"
  std::string_view content_type;
  std::string_view body;
};

// The asset served at `path`, or null. The bodies are static: they live as long as the program.
const WebAsset* FindWebAsset(std::string_view path);

}  // namespace ds
