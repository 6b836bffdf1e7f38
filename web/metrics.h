// GET /metrics: the Prometheus text format (0.0.4), written by prometheus-cpp's TextSerializer.
// Every family and its HELP text is in web/metrics.cc, one function per area, except the duration
// histograms, which come ready-made (ControllerView::durations). docs/reference.md lists them all;
// test_deploy.py checks that table against the golden test/testdata/golden/metrics.txt.
#pragma once

#include <string>

#include "web/controller_view.h"

namespace ds {

// The exposition of one scrape, built afresh from the view: families ordered by name and series
// by label values, so equal views give equal bytes. The rebalancer's eviction and effect families
// appear only with a rebalance: section, dynamic_scheduler_rule_mean only with relative rules.
// Pure.
std::string RenderMetrics(const ControllerView& view);

}  // namespace ds
