#include "model/accounts.h"

namespace gpurent::model {

std::string tenant_package_account(std::string_view tenant_id, std::string_view package_id) {
  return "tenant:" + std::string(tenant_id) + ":package:" + std::string(package_id);
}

std::string tenant_reservation_account(std::string_view tenant_id,
                                       std::string_view reservation_id) {
  return "tenant:" + std::string(tenant_id) + ":reservation:" + std::string(reservation_id);
}

}  // namespace gpurent::model
