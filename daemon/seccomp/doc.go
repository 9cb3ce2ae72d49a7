// Package seccomp decides and checks the seccomp profile of each container plinthd
// runs, and hands the pod runtime a validated runtime-spec LinuxSeccomp that runc
// compiles and loads itself.
//
//   - Choose and Profiles.ForContainer resolve a container's profile from its pod:
//     privileged is Unconfined, the container's seccompProfile wins over the pod's,
//     RuntimeDefault is Plinth's own profile (runtimedefault.go, adjusted to the
//     container's capabilities), Localhost reads a file under the profile root
//     (/var/lib/plinth/seccomp) without ever leaving it.
//   - Parse reads OCI runtime-spec JSON strictly, and Validate checks it against the
//     linked libseccomp and compiles it as runc will; every error is a *ProfileError
//     naming the file, the JSON path (syscalls[3].names[1]) and the value.
//   - CheckCommand is `plinthctl seccomp check FILE`.
//
// It owns nothing but the profiles it returns. It reads files under the profile root
// (or the one file CheckCommand is given) and reaches libseccomp only through a Backend
// (Libseccomp is kernel/seccomp's); it never loads a filter.
package seccomp
