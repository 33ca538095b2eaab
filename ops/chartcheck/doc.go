// Package chartcheck checks the Helm chart charts/scrapy-cluster without a
// Kubernetes cluster: everything that can be known from the chart alone.
//
//   - Lint is `helm lint --strict` and Render is `helm template`, run through
//     Helm's own Go packages (helm.sh/helm/v3, pinned in ops/go.mod), so
//     nothing needs installing and the version is the module's;
//   - Decode reads every rendered object strictly into the Kubernetes API's Go
//     types (k8s.io/api, and the Prometheus Operator's and KEDA's for their
//     kinds): a field the API does not have fails;
//   - Restricted evaluates every pod spec with the Pod Security Standards'
//     own implementation (k8s.io/pod-security-admission) at the "restricted"
//     level, and asks for a read-only root file system besides;
//   - Images compares the images named with the ones docker/ builds, and the
//     programs the containers run with what those images hold;
//   - Probes runs each component's binary with the container's environment
//     (`<binary> settings`) to learn the port it serves its admin endpoint
//     on, and compares the probes with it and with the paths scutils/admin
//     serves;
//   - Egress evaluates the crawlers' NetworkPolicy for an address and port.
//
// The tests render the chart with its default values and with the values
// files under charts/scrapy-cluster/ci/, run every check, and show that each
// check fails on a chart broken on purpose.
//
//	go test -race -count=1 ./ops/chartcheck/
package chartcheck
