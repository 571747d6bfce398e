// Package stack starts real components for tests: etcd, kube-apiserver,
// kube-controller-manager and Argo CD (redis, repo-server, application
// controller, applicationset controller, API server), each as a plain process
// on free loopback ports with all state in a temp dir.
//
// The binaries come from `make test-stack` (hack/test-stack.sh), which builds
// them into $GITOPS_SERVICE_CACHE (default $HOME/.cache/gitops-service);
// etcd, redis-server and git come from Debian packages (hack/install-deps.sh).
//
// Typical use from TestMain:
//
//	func TestMain(m *testing.M) {
//		if _, err := stack.Binaries(); err != nil {
//			if stack.Required() {
//				fmt.Fprintln(os.Stderr, err)
//				os.Exit(1)
//			}
//			fmt.Fprintln(os.Stderr, "SKIP:", err)
//			os.Exit(0)
//		}
//		k, err := stack.StartKube(ctx, stack.KubeOptions{Name: "local", ControllerManager: true})
//		...
//		code := m.Run()
//		k.Stop()
//		os.Exit(code)
//	}
//
// Set GITOPS_SERVICE_STACK_LOGS=1 to mirror every component's output to
// stderr, prefixed with its name; set GITOPS_SERVICE_STACK_KEEP=1 to keep the
// state dirs after Stop for inspection.
package stack
