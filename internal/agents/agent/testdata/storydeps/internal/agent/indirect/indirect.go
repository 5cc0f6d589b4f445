package indirect

import _ "example.com/m/internal/mid"
