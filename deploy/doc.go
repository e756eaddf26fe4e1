// Package deploy holds the checks of deploy/ that `make deploy-check`
// runs: the compose file (docker-compose config), the Helm chart
// (rendered with Helm's library, every object decoded strictly into the
// Kubernetes API types, the gateway config it renders accepted by the
// gateway's own validation), the container image built without an engine
// (deploy/image), and the Dockerfile's sources. Its own module keeps the
// Helm and Kubernetes libraries out of the gateway's build.
package deploy
