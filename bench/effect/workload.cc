#include "bench/effect/workload.h"

#include <algorithm>
#include <cmath>

namespace effect {
namespace {

constexpr double kDay = 86400;
constexpr double kMiB = 1 << 20;

void DrawShape(const WorkloadParams& w, Deployment* d, Rng* rng) {
  // Requests are written in whole millicores and MiB, as people write them.
  d->cpu_request = std::max(0.001, std::round(rng->Draw(w.cpu_request) * 1000) / 1000);
  d->memory_request = std::max(kMiB, std::round(rng->Draw(w.memory_request) / kMiB) * kMiB);
  d->cpu_ratio = rng->Draw(w.cpu_usage_ratio);
  d->memory_ratio = rng->Draw(w.memory_usage_ratio);
  d->phase = w.phase_spread_seconds * rng->Normal();
  if (rng->Uniform() < w.leak_share)
    d->leak_per_second = w.leak_per_hour * d->memory_request / 3600;
}

}  // namespace

std::vector<Deployment> GenerateDeployments(const WorkloadParams& w, size_t nodes, Rng* rng) {
  std::vector<Deployment> out;
  const double want = w.pods_per_node * static_cast<double>(nodes);
  double have = 0;
  while (have < want) {
    Deployment d;
    d.ns = "team-" + std::to_string(out.size() % 20);
    d.name = "svc-" + std::to_string(out.size());
    DrawShape(w, &d, rng);
    const double r = std::clamp(std::round(rng->Draw(w.replicas)), 1.0, w.max_replicas);
    d.replicas = static_cast<size_t>(std::min(r, std::max(1.0, std::ceil(want - have))));
    have += static_cast<double>(d.replicas);
    out.push_back(std::move(d));
  }
  return out;
}

Deployment GenerateJob(const WorkloadParams& w, uint64_t serial, Rng* rng) {
  Deployment d;
  d.ns = "batch";
  d.name = "job-" + std::to_string(serial);
  d.job = true;
  DrawShape(w, &d, rng);
  d.leak_per_second = 0;
  d.job_seconds = rng->Draw(w.job_seconds);
  return d;
}

double DailyFactor(double amplitude, double t, double peak, double phase) {
  return 1 + amplitude * std::cos(2 * M_PI * (t - peak - phase) / kDay);
}

double PodMultiplier(uint64_t seed, uint64_t deployment, uint64_t slot, uint64_t resource,
                     double jitter) {
  Rng r(Mix(seed ^ Mix(deployment * 0x100000001b3ULL ^ Mix(slot * 4 + resource))));
  return std::exp(jitter * r.Normal());
}

double CpuFactor(const WorkloadParams& w, const Deployment& d, double t) {
  const double burst = t < d.burst_until ? w.burst_factor : 1;
  return d.cpu_ratio * DailyFactor(w.cpu_daily_amplitude, t, w.peak_seconds, d.phase) * burst;
}

double MemoryFactor(const WorkloadParams& w, const Deployment& d, double t) {
  return d.memory_ratio * DailyFactor(w.memory_daily_amplitude, t, w.peak_seconds, d.phase);
}

}  // namespace effect
