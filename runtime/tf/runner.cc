#include "runtime/tf/runner.h"

#include "emit/tf/naming.h"

namespace retc::runtime::tf {

const Runner& runner() {
  static const Runner kRunner{
      check_config,
      train_config,
      [](const ir::Param& p) { return emit::tf::variable_name(p) + ":0"; },
  };
  return kRunner;
}

}  // namespace retc::runtime::tf
