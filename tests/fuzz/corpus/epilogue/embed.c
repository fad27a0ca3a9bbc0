float f(float x) { return x; }
#embed "/etc/passwd"
