#include "model/desired_state_json.h"

#include "model/json_reader.h"

namespace gpurent::model {

Result<DesiredState> read_desired_state(std::string_view json) {
  using namespace json_reader;
  GPURENT_TRY(object, open_object(json));
  DesiredState desired;
  GPURENT_CHECK(read_object(object, Path{}, desired));
  return desired;
}

}  // namespace gpurent::model
