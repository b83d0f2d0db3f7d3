#include "configs/bundled.h"

namespace retc::configs {

std::vector<ModelDef> bundled_models() { return {model_12ax()}; }

}  // namespace retc::configs
