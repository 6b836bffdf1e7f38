// The workload model: deployments whose requests under- or over-state their real usage, daily
// peaks with a per-service phase, bursts, slow memory leaks that are returned only when the pod
// restarts, and the churn (rollouts, scaling, short jobs) as Poisson processes. Pure: every draw
// comes from the Rng handed in, and a pod's own variation is a function of (seed, deployment,
// replica slot), so each scenario sees the same workload wherever its pods land.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/effect/params.h"
#include "bench/effect/random.h"

namespace effect {

struct Deployment {
  std::string ns, name;
  bool job = false;  // a one-pod Job: ends after job_seconds
  double job_seconds = 0;
  double cpu_request = 0;                  // cores per pod (whole millicores)
  double memory_request = 0;               // bytes per pod (whole MiB)
  double cpu_ratio = 1, memory_ratio = 1;  // real usage / request, before the daily swing
  double phase = 0;                        // seconds: this service's peak is this much later
  double leak_per_second = 0;              // bytes a pod's working set grows per second of age
  size_t replicas = 1;                     // desired
  double burst_until = -1;                 // cpu multiplied by the burst factor until then
};

// Deployments until their replicas reach `pods_per_node * nodes`. Jobs are not included.
std::vector<Deployment> GenerateDeployments(const WorkloadParams& w, size_t nodes, Rng* rng);

// One short job, created at the time of its arrival.
Deployment GenerateJob(const WorkloadParams& w, uint64_t serial, Rng* rng);

// 1 + amplitude * cos(2 pi (t - peak - phase) / day): the daily swing of a service.
double DailyFactor(double amplitude, double t, double peak, double phase);

// A pod's multiplier around its deployment's usage ratio: log-normal with sigma `jitter`,
// fixed by (seed, deployment, slot), so a replacement in the same slot behaves alike.
double PodMultiplier(uint64_t seed, uint64_t deployment, uint64_t slot, uint64_t resource,
                     double jitter);

// The factor a deployment's pods apply to their request at time t (cpu: daily swing and burst;
// memory: daily swing), before the pod's own multiplier and, for memory, the leak.
double CpuFactor(const WorkloadParams& w, const Deployment& d, double t);
double MemoryFactor(const WorkloadParams& w, const Deployment& d, double t);

}  // namespace effect
