// Command plinth-shim watches one container for plinthd (daemon/pods/shim): plinthd's
// runc driver starts it for every container it creates.
package main

import (
	"os"

	"github.com/plinth/plinth/daemon/pods/shim"
)

func main() { os.Exit(shim.Main(os.Args[1:])) }
