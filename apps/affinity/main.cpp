// hympi-affinity: where every rank and thread really runs, and whether that is what was asked.
#include <iostream>

#include "hympi/app/app.hpp"

namespace {

class AffinityApp final : public hympi::AppDefinition {
 public:
  std::string name() const override { return "affinity"; }
  void add_options(hympi::OptionSet& cli) override {
    cli.flag("--check", check_,
             "exit 1 if a thread runs outside its set, shares a core under core binding, or threads share "
             "PUs without --oversubscribe");
  }
  bool verification_required() const override { return check_; }
  hympi::ResultRecord run(hympi::AppContext& ctx) override {
    hympi::ResultRecord r;
    r.app = name();
    r.problem = "binding";
    r.rate_unit = "threads";
    if (ctx.env.rank() == 0) {
      const int cores = ctx.topology.cores();
      auto problems = hympi::check_binding(ctx.bindings, ctx.affinity.bind, cores);
      // Shared PUs make every measurement a scheduler artefact: only a user who asked for it gets a pass.
      const auto sharing = hympi::assess_pu_sharing(ctx.bindings, ctx.topology.pus());
      if (sharing.oversubscribed && !ctx.affinity.oversubscribe)
        problems.push_back("oversubscribed: " + sharing.summary +
                           " (pass --oversubscribe or set HYMPI_OVERSUBSCRIBE=1 if this is intended)");
      std::cout << hympi::format_binding_table(ctx.bindings);
      for (const auto& p : problems) std::cout << "binding problem: " << p << "\n";
      std::cout << (problems.empty() ? "binding check: PASSED" : "binding check: FAILED") << std::endl;
      r.verified = problems.empty();
      r.rate = static_cast<double>(ctx.bindings.size());
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
