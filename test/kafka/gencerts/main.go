// Command gencerts writes a test CA, a broker certificate for 127.0.0.1
// and localhost, a client certificate, and their PEM, JKS and PKCS12
// stores into a directory, for test/kafka/kafka.sh's secure listeners.
// The stores' passwords are kafkatest.StorePassword and
// kafkatest.KeyPassword, which the tests know: the directory is all they
// need (SLUICE_TEST_TLS_DIR).
//
// It prints the broker's ssl.* properties for its PKCS12 keystore, for
// kafka.sh to append to server.properties, so that the passwords are
// written down in one place only.
//
//	go run ./test/kafka/gencerts DIR
package main

import (
	"fmt"
	"os"

	"github.com/sluice-io/sluice/internal/kafkatest"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gencerts DIR")
		os.Exit(2)
	}
	f, err := kafkatest.GenerateTLS(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "gencerts:", err)
		os.Exit(1)
	}
	fmt.Printf("ssl.keystore.type=PKCS12\nssl.keystore.location=%s\nssl.keystore.password=%s\nssl.key.password=%s\n",
		f.Server.KeystorePKCS12, kafkatest.StorePassword, kafkatest.StorePassword)
}
