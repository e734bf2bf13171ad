#include "kv/status.h"

#include <gtest/gtest.h>

#include <memory>

namespace kv {
namespace {

TEST(StatusTest, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "ok");
}

TEST(StatusTest, CarriesCodeAndMessage) {
  Status s = Status::Corruption("superblock checksum mismatch");
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(s.IsCorruption());
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_EQ(s.ToString(), "corruption: superblock checksum mismatch");
}

TEST(StatusTest, EveryCodeHasADistinctName) {
  EXPECT_EQ(StatusCodeName(StatusCode::kNoSpace), "no_space");
  EXPECT_EQ(StatusCodeName(StatusCode::kPermissionDenied), "permission_denied");
  EXPECT_EQ(StatusCodeName(StatusCode::kConditionFailed), "condition_failed");
  EXPECT_TRUE(Status::ConditionFailed("x").IsConditionFailed());
  EXPECT_NE(StatusCodeName(StatusCode::kBusy),
            StatusCodeName(StatusCode::kTimedOut));
}

Status FailsWith(StatusCode code) { return Status(code, "x"); }

Status Chain() {
  KV_RETURN_IF_ERROR(FailsWith(StatusCode::kOk));
  KV_RETURN_IF_ERROR(FailsWith(StatusCode::kIoError));
  return Status::Busy("not reached");
}

TEST(StatusTest, ReturnIfErrorStopsAtFirstFailure) {
  EXPECT_EQ(Chain().code(), StatusCode::kIoError);
}

TEST(ResultTest, HoldsValueOrStatus) {
  Result<int> good(7);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 7);
  Result<int> bad(Status::NotFound("no such key"));
  EXPECT_FALSE(bad.ok());
  EXPECT_TRUE(bad.status().IsNotFound());
}

TEST(ResultTest, OkStatusIsNeverAValue) {
  Result<int> r{Status::Ok()};
  EXPECT_FALSE(r.ok());
}

TEST(ResultTest, MoveOnlyValues) {
  Result<std::unique_ptr<int>> r(std::make_unique<int>(3));
  ASSERT_TRUE(r.ok());
  std::unique_ptr<int> p = std::move(r).value();
  EXPECT_EQ(*p, 3);
}

}  // namespace
}  // namespace kv
