S=/root/store; mkdir -p $S
for f in .keeplm_dev/p/*; do [ -f "$f" ] && mv "$f" $S/ && echo "stored $(basename $f)"; done
if [ ! -f $S/w8.safetensors ] && [ -f $S/w8.p0 ] && [ -f $S/w8.p1 ] && [ -f $S/w8.p2 ]; then
  cat $S/w8.p0 $S/w8.p1 $S/w8.p2 > $S/w8.tmp && echo "841d4e20d494cf6fbc8ef231d8cc4c63fd306e2385ed53aa01cea56615918cb5  $S/w8.tmp" | sha256sum -c && mv $S/w8.tmp $S/w8.safetensors && rm $S/w8.p*
fi
ls -la $S
