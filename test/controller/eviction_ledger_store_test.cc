#include "controller/eviction_ledger_store.h"

#include <gtest/gtest.h>

#include "kube/lease.h"
#include "test/fakes/fake_kube_api.h"

namespace ds {
namespace {

const LedgerPlace kPlace{"ds", "dynamic-scheduler-evictions"};

LedgerEntry Entry(const std::string& pod, double at) {
  return LedgerEntry{at, "node-1", pod, "uid-" + pod, "shop/ReplicaSet/x", "app=x", 1, 1e9, false};
}

TEST(EvictionLedgerStore, AMissingLeaseIsAnEmptyLedgerCreatedByTheFirstWrite) {
  FakeKubeApi api;
  EvictionLedgerStore store(&api, kPlace);
  auto read = store.Read(1000);
  ASSERT_TRUE(read.ok());
  EXPECT_TRUE(read->empty());
  ASSERT_TRUE(store.Append(Entry("shop/a", 1000), 1000, {}).ok());
  auto lease = api.leases().at("ds/dynamic-scheduler-evictions");
  EXPECT_EQ(lease.holder_identity, "") << "it holds no leadership";
  EXPECT_EQ(lease.lease_duration_seconds, 3600) << "the API refuses a non-positive one";
  auto entries = DecodeLedger(LeaseAnnotation(lease.object, kLedgerAnnotation));
  ASSERT_TRUE(entries.ok());
  ASSERT_EQ(entries->size(), 1u);
  EXPECT_EQ((*entries)[0].pod, "shop/a");
  // Another process reads what this one wrote.
  EvictionLedgerStore other(&api, kPlace);
  ASSERT_EQ(other.Read(1001)->size(), 1u);
}

TEST(EvictionLedgerStore, AConflictReadsAgainAndKeepsTheOtherWritersEntries) {
  FakeKubeApi api;
  EvictionLedgerStore a(&api, kPlace), b(&api, kPlace);
  ASSERT_TRUE(a.Append(Entry("shop/a", 1000), 1000, {}).ok());
  ASSERT_TRUE(b.Read(1000).ok());
  ASSERT_TRUE(a.Append(Entry("shop/b", 1001), 1001, {}).ok());  // b's copy is stale now
  ASSERT_TRUE(b.Append(Entry("shop/c", 1002), 1002, {}).ok());
  auto all = a.Read(1003);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[2].pod, "shop/c");
  ASSERT_TRUE(a.Remove("shop/b", 1001, 1004, {}).ok());
  EXPECT_EQ(b.Read(1004)->size(), 2u);
}

TEST(EvictionLedgerStore, AClosedGateWritesNothing) {
  FakeKubeApi api;
  EvictionLedgerStore store(&api, kPlace);
  Status st = store.Append(Entry("shop/a", 1000), 1000, [] { return false; });
  EXPECT_EQ(st.code(), StatusCode::kCancelled);
  EXPECT_TRUE(api.leases().empty());
}

TEST(EvictionLedgerStore, WhatCannotBeReadIsNeverOverwritten) {
  FakeKubeApi api;
  ASSERT_TRUE(api.SetLeaseObject("ds", "dynamic-scheduler-evictions",
                                 R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease",)"
                                 R"("metadata":{"name":"dynamic-scheduler-evictions",)"
                                 R"("namespace":"ds","resourceVersion":"7","annotations":)"
                                 R"({"dynamic-scheduler.io/evictions":"[{\"t\":1}]"}},"spec":{}})")
                  .ok());
  EvictionLedgerStore store(&api, kPlace);
  auto read = store.Read(1000);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("lease ds/dynamic-scheduler-evictions"), std::string::npos)
      << read.status().ToString();
  EXPECT_FALSE(store.Append(Entry("shop/a", 1000), 1000, {}).ok());
  EXPECT_EQ(api.leases().at("ds/dynamic-scheduler-evictions").resource_version, "7");
}

TEST(EvictionLedgerStore, TheLeasesOtherFieldsAreKept) {
  FakeKubeApi api;
  ASSERT_TRUE(api.SetLeaseObject("ds", "dynamic-scheduler-evictions",
                                 R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease",)"
                                 R"("metadata":{"name":"dynamic-scheduler-evictions",)"
                                 R"("namespace":"ds","resourceVersion":"7","labels":{"team":"x"},)"
                                 R"("annotations":{"note":"keep"}},"spec":{}})")
                  .ok());
  EvictionLedgerStore store(&api, kPlace);
  ASSERT_TRUE(store.Append(Entry("shop/a", 1000), 1000, {}).ok());
  const std::string object = api.leases().at("ds/dynamic-scheduler-evictions").object;
  EXPECT_EQ(LeaseAnnotation(object, "note"), "keep");
  EXPECT_NE(object.find("\"team\":\"x\""), std::string::npos) << object;
}

}  // namespace
}  // namespace ds
