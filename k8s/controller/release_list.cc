#include "k8s/controller/release_list.h"

#include "k8s/controller/job_config_map.h"
#include "k8s/controller/object_names.h"

namespace fiber::k8s::controller {

nlohmann::json build_release_config_map(const JobSpec& job) {
  return build_job_config_map(job, release_config_map_name(job.name), {{kReleaseListKey, ""}});
}

}  // namespace fiber::k8s::controller
