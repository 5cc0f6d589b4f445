package clean

import _ "fmt"
