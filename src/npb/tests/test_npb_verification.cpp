// The NPB-MZ verification rule, class data and Mop/s formulas, without running a solver: the
// reference values must pass, and any perturbation, NaN, wrong dt or wrong iteration count fail.
#include "hympi/core/error.hpp"
#include "hympi/npb/class_params.hpp"
#include "hympi/npb/mops.hpp"
#include "hympi/npb/verification.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>

namespace {

using hympi::npb::Benchmark;
using hympi::npb::ClassParams;

std::string data_file() { return std::string(HYMPI_TEST_DATA) + "/../../data/npb-mz/verification.json"; }

ClassParams params(Benchmark b, const std::string& cls) { return hympi::npb::load_class_params(b, cls, data_file()); }

hympi::npb::Verification verify_reference(const ClassParams& p) {
  return hympi::npb::verify(p, p.niter_ref, p.dt_ref, p.xcr_ref, p.xce_ref, p.xci_ref);
}

TEST(NpbVerification, ReferenceValuesPassForEveryBenchmark) {
  for (Benchmark b : {Benchmark::bt, Benchmark::sp, Benchmark::lu}) {
    const ClassParams p = params(b, "W");
    ASSERT_TRUE(p.has_reference);
    const auto v = verify_reference(p);
    EXPECT_TRUE(v.passed) << hympi::npb::to_string(b);
    EXPECT_TRUE(v.dt_ok);
    EXPECT_TRUE(v.niter_ok);
  }
}

TEST(NpbVerification, EachNormBeyondEpsilonFails) {
  const ClassParams p = params(Benchmark::lu, "S");
  for (int m = 0; m < 5; ++m) {
    auto xcr = p.xcr_ref;
    xcr[m] *= 1.0 + 10.0 * p.epsilon;
    EXPECT_FALSE(hympi::npb::verify(p, p.niter_ref, p.dt_ref, xcr, p.xce_ref, p.xci_ref).passed) << "xcr " << m;
    auto xce = p.xce_ref;
    xce[m] *= 1.0 - 10.0 * p.epsilon;
    EXPECT_FALSE(hympi::npb::verify(p, p.niter_ref, p.dt_ref, p.xcr_ref, xce, p.xci_ref).passed) << "xce " << m;
  }
  // LU also checks the surface integral; within epsilon still passes.
  EXPECT_FALSE(hympi::npb::verify(p, p.niter_ref, p.dt_ref, p.xcr_ref, p.xce_ref, p.xci_ref * 1.001).passed);
  EXPECT_TRUE(
      hympi::npb::verify(p, p.niter_ref, p.dt_ref, p.xcr_ref, p.xce_ref, p.xci_ref * (1.0 + 0.1 * p.epsilon)).passed);
}

TEST(NpbVerification, NanWrongDtAndWrongIterationsFail) {
  const ClassParams p = params(Benchmark::sp, "S");
  auto xcr = p.xcr_ref;
  xcr[2] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(hympi::npb::verify(p, p.niter_ref, p.dt_ref, xcr, p.xce_ref, 0.0).passed);
  const auto wrong_dt = hympi::npb::verify(p, p.niter_ref, p.dt_ref * 2.0, p.xcr_ref, p.xce_ref, 0.0);
  EXPECT_FALSE(wrong_dt.passed);
  EXPECT_FALSE(wrong_dt.dt_ok);
  const auto wrong_niter = hympi::npb::verify(p, p.niter_ref + 1, p.dt_ref, p.xcr_ref, p.xce_ref, 0.0);
  EXPECT_FALSE(wrong_niter.passed);
  EXPECT_FALSE(wrong_niter.niter_ok);
  std::ostringstream text;
  wrong_niter.print(text, p);
  EXPECT_NE(text.str().find("NITER does not match"), std::string::npos);
  EXPECT_NE(text.str().find("Verification failed"), std::string::npos);
}

TEST(NpbVerification, ClassWithoutReferenceNeverPasses) {
  ClassParams p = params(Benchmark::bt, "S");
  p.has_reference = false;
  const auto v = verify_reference(p);
  EXPECT_FALSE(v.passed);
  EXPECT_FALSE(v.reference_available);
}

TEST(NpbClassParams, UnknownClassAndMissingFileAreErrors) {
  EXPECT_THROW((void)params(Benchmark::bt, "Q"), hympi::InvalidArgument);
  EXPECT_THROW((void)params(Benchmark::bt, "_meta"), hympi::InvalidArgument);
  EXPECT_THROW((void)hympi::npb::load_class_params(Benchmark::bt, "S", "/nonexistent/verification.json"),
               hympi::Error);
  EXPECT_EQ(hympi::npb::parse_benchmark("lu"), Benchmark::lu);
  EXPECT_THROW((void)hympi::npb::parse_benchmark("ft-mz"), hympi::InvalidArgument);
}

TEST(NpbMops, FormulaParsesSignedTermsAndRejectsOthers) {
  const auto f = hympi::npb::MopsFormula::parse("3478.8*n3 - 17655.7*nsur + 28023.7*navg - 5", true);
  EXPECT_DOUBLE_EQ(f.n3, 3478.8);
  EXPECT_DOUBLE_EQ(f.nsur, -17655.7);
  EXPECT_DOUBLE_EQ(f.navg, 28023.7);
  EXPECT_DOUBLE_EQ(f.constant, -5.0);
  EXPECT_THROW((void)hympi::npb::MopsFormula::parse("3*n4", false), hympi::InvalidArgument);
  EXPECT_THROW((void)hympi::npb::MopsFormula::parse("", false), hympi::InvalidArgument);
}

TEST(NpbMops, TotalSumsTheFormulaOverZones) {
  const hympi::ZoneGrid grid({2, 1, 20, 10, 10, 1.0});
  ASSERT_EQ(grid.num_zones(), 2);
  for (const auto& z : grid.zones()) {
    ASSERT_EQ(z.nx, 10);
    ASSERT_EQ(z.ny, 10);
    ASSERT_EQ(z.nz, 10);
  }
  hympi::npb::MopsFormula f;
  f.n3 = 1.0;
  f.nsur = 2.0;
  f.navg = 3.0;
  f.constant = 4.0;
  // Per 10x10x10 zone and iteration: n3 = 1000, nsur = 100, navg = 10, so 1000 + 200 + 30 + 4.
  EXPECT_NEAR(hympi::npb::mops_total(f, grid, 5, 0.5), 2.0 * 5.0 * 1.0e-6 * 1234.0 / 0.5, 1e-15);
  EXPECT_EQ(hympi::npb::mops_total(f, grid, 5, 0.0), 0.0);
}

}  // namespace
