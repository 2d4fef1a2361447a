// Command hello is the smallest image the imagebuild tests build: it
// prints its arguments and exits.
package main

import (
	"fmt"
	"os"
)

func main() { fmt.Println("hello", os.Args[1:]) }
