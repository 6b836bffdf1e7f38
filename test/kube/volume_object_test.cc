// Where a claim's volume can be used: the decoders of a PersistentVolumeClaim and a
// PersistentVolume, as the API server sends them.
#include "kube/volume_object.h"

#include <gtest/gtest.h>

namespace ds {
namespace {

TEST(VolumeObject, AClaimNamesItsVolumeOnlyOnceBound) {
  auto bound = DecodeClaimVolume(R"({"metadata":{"name":"data","namespace":"shop"},
    "spec":{"volumeName":"pv-1"},"status":{"phase":"Bound"}})");
  ASSERT_TRUE(bound.ok()) << bound.status().ToString();
  EXPECT_EQ(*bound, "pv-1");
  auto pending = DecodeClaimVolume(R"({"metadata":{"name":"data"},"spec":{"volumeName":"pv-1"},
    "status":{"phase":"Pending"}})");
  ASSERT_TRUE(pending.ok());
  EXPECT_EQ(*pending, "") << "named but not bound yet";
  auto none = DecodeClaimVolume(R"({"metadata":{"name":"data"},"spec":{}})");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, "");
  EXPECT_FALSE(DecodeClaimVolume("{").ok());
  EXPECT_FALSE(DecodeClaimVolume("[]").ok());
}

TEST(VolumeObject, AVolumesRequiredNodeAffinity) {
  auto zonal = DecodeVolumeNodeAffinity(R"({"metadata":{"name":"pv-1"},"spec":{
    "nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[
      {"key":"topology.kubernetes.io/zone","operator":"In","values":["z2"]}]}]}}}})");
  ASSERT_TRUE(zonal.ok()) << zonal.status().ToString();
  ASSERT_EQ(zonal->size(), 1u);
  EXPECT_TRUE(RequiredTermsMatch(*zonal, "n", {{"topology.kubernetes.io/zone", "z2"}}));
  EXPECT_FALSE(RequiredTermsMatch(*zonal, "n", {{"topology.kubernetes.io/zone", "z1"}}));
  auto anywhere = DecodeVolumeNodeAffinity(R"({"metadata":{"name":"nfs"},"spec":{}})");
  ASSERT_TRUE(anywhere.ok());
  EXPECT_TRUE(anywhere->empty()) << "no node affinity: usable from every node";
  auto odd = DecodeVolumeNodeAffinity(R"({"spec":{"nodeAffinity":{"required":{
    "nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"Near"}]}]}}}})");
  EXPECT_FALSE(odd.ok()) << "an unreadable term is no guess";
}

// VolumeZone: an older volume that says its zone only by label keeps its pods there too.
TEST(VolumeObject, ZoneLabelsHoldAsWellAsTheNodeAffinity) {
  auto labelled = DecodeVolumeNodeAffinity(R"({"metadata":{"name":"pv-old","labels":{
    "failure-domain.beta.kubernetes.io/zone":"z1__z2"}},"spec":{}})");
  ASSERT_TRUE(labelled.ok()) << labelled.status().ToString();
  EXPECT_TRUE(RequiredTermsMatch(*labelled, "n", {{"topology.kubernetes.io/zone", "z2"}}));
  EXPECT_FALSE(RequiredTermsMatch(*labelled, "n", {{"topology.kubernetes.io/zone", "z3"}}));
  auto both = DecodeVolumeNodeAffinity(R"({"metadata":{"labels":{
    "topology.kubernetes.io/zone":"z1"}},"spec":{"nodeAffinity":{"required":{"nodeSelectorTerms":[
    {"matchExpressions":[{"key":"disk","operator":"In","values":["ssd"]}]}]}}}})");
  ASSERT_TRUE(both.ok());
  EXPECT_TRUE(
      RequiredTermsMatch(*both, "n", {{"disk", "ssd"}, {"topology.kubernetes.io/zone", "z1"}}));
  EXPECT_FALSE(
      RequiredTermsMatch(*both, "n", {{"disk", "ssd"}, {"topology.kubernetes.io/zone", "z2"}}))
      << "the zone label and the node affinity both hold";
}

}  // namespace
}  // namespace ds
