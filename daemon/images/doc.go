// Package images keeps container images on the node: it pulls them from OCI registries
// (anonymously or with the credentials of a pod's image pull secrets), imports OCI
// layout and docker-save archives, decides by imagePullPolicy whether a pull is due,
// backs failing pulls off as kubelet does (ErrImagePull, then ImagePullBackOff), builds
// each container's root filesystem from an image's layers, and lists, sizes and deletes
// images for image garbage collection.
//
// It owns the content-addressed store under its root (default /var/lib/plinth/images):
//
//	blobs/sha256/<hex>      manifests and configs, by digest
//	layers/<chainID hex>/   one unpacked layer (fs/ and layer.json), shared by every image using it
//	records/<imageID hex>   an image: names, manifest, config, chain IDs, size, pull and use times
//	lock                    flock: shared while pulling or importing, exclusive while records change or GC runs
//
// and, inside the directory the runtime gives it for a container, rootfs/ plus
// overlay-upper/ and overlay-work/ (or a copied tree), and rootfs.json. Writes are crash
// safe: files go through internal/atomicfile and unpacked trees are renamed into place
// from a temporary directory, so a crash leaves either the old state or the new one and
// leftovers that the next Open removes.
//
// It touches the network only through go-containerregistry's remote package, and the
// kernel only through mount(2) and the new mount API (overlayfs) and the file system
// calls of unpacking and copying. It is Linux-only.
//
// What the pod runtime calls:
//
//	store, err := images.Open(images.Options{Root: ..., Registerer: reg})
//	img, err := store.EnsureImage(ctx, images.PullRequest{Image, PullPolicy, PullSecrets, BackoffKey})
//	    // errors: images.Reason(err) is "ErrImagePull", "ImagePullBackOff",
//	    // "ErrImageNeverPull" or "InvalidImageName"; img.Config holds entrypoint, env, user...
//	rootfs, err := store.PrepareRootFS(containerID, img.ID, containerDir) // idempotent
//	err = images.RemoveRootFS(containerDir)                              // idempotent
//	gc := images.NewImageGC(store, images.DefaultGCPolicy(), inUse, 0)   // go gc.Run(ctx); gc.Trigger(); gc.Collect(ctx)
package images
