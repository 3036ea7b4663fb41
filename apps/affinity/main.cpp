// hympi-affinity: where every rank and thread really runs, and whether that is what was asked.
#include <iostream>

#include "hympi/app.hpp"

namespace {

class AffinityApp final : public hympi::AppDefinition {
 public:
  std::string name() const override { return "affinity"; }
  std::string description() const override { return "Placement table of every rank and OpenMP thread"; }
  void add_options(CLI::App& cli) override {
    cli.add_flag("--check", check_, "exit 1 if a thread runs outside its set or shares a core under core binding");
  }
  bool verification_required() const override { return check_; }
  hympi::ResultRecord run(hympi::AppContext& ctx) override {
    hympi::ResultRecord r;
    r.app = name();
    r.problem = "placement";
    r.rate_unit = "threads";
    if (ctx.env.rank() == 0) {
      const int cores = ctx.topology.cores();
      const auto problems = hympi::check_placement(ctx.placement, ctx.affinity.bind, cores);
      std::cout << hympi::format_placement_table(ctx.placement);
      for (const auto& p : problems) std::cout << "placement problem: " << p << "\n";
      std::cout << (problems.empty() ? "placement check: PASSED" : "placement check: FAILED") << std::endl;
      r.verified = problems.empty();
      r.rate = static_cast<double>(ctx.placement.size());
      r.metrics["problems"] = problems;
    }
    int ok = r.verified ? 1 : 0;
    HYMPI_MPI(MPI_Bcast(&ok, 1, MPI_INT, 0, ctx.env.world()));
    r.verified = ok == 1;
    return r;
  }

 private:
  bool check_ = false;
};

}  // namespace

int main(int argc, char** argv) {
  AffinityApp app;
  return hympi::run_app(argc, argv, app);
}
