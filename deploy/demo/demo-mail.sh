#!/bin/sh
# The demo mail server's start: a CA and a certificate for the host name "mail" at the first start
# (the CA's certificate readable by clubhouse in /run/demo-ca, the keys not), then Dovecot in the
# foreground.
set -eu
dir=/run/demo-ca
if [ ! -s "$dir/ca.pem" ]; then
  mkdir -p "$dir/private"
  chmod 0700 "$dir/private"
  cd "$dir/private"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
    -subj '/CN=clubhouse demo CA' -keyout ca.key -out ca.pem \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -subj '/CN=mail' -keyout server.key -out server.csr 2>/dev/null
  printf 'subjectAltName=DNS:mail,DNS:localhost\nextendedKeyUsage=serverAuth\n' > server.ext
  openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 3650 \
    -extfile server.ext -out server.pem 2>/dev/null
  rm -f ca.key server.csr server.ext ca.srl
  cp ca.pem "$dir/ca.pem.part" && chmod 0644 "$dir/ca.pem.part" && mv "$dir/ca.pem.part" "$dir/ca.pem"
fi
mkdir -p /var/lib/demo-mail && chown dovecot:dovecot /var/lib/demo-mail
exec /usr/sbin/dovecot -F
