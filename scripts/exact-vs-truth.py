#!/usr/bin/env python3
"""Writer-truth shares from tsampler's CSV (10 ms): per tick, each copy thread not idle counts
1/active toward its class (D + stack signature, R); run-queue wait growth comes out of running."""
import csv, sys, json
SIG=[("ext4_nonda_switch","disk_wait"),("balance_dirty_pages","dirty_throttle"),("jbd2_","journal"),("start_this_handle","journal"),("do_get_write_access","journal"),
     ("folio_wait_writeback","disk_wait"),("wait_on_page_writeback","disk_wait"),("folio_wait_stable","disk_wait"),("rq_qos_wait","disk_wait"),("blk_mq_get_tag","disk_wait"),
     ("file_write_and_wait_range","sync_writes"),("filemap_read","source_read"),("filemap_get_pages","source_read"),("ksys_read","source_read")]
rows=list(csv.DictReader(open(sys.argv[1])))
acc={}; prev=None; n=0
for r in rows:
    ths=[t for t in r['threads'].split(';') if t]
    copy=[t for t in ths if t.split('/')[0].startswith(('copyscope-copy','copyscope-engi'))]
    if not any(t.startswith('copyscope-copy') for t in copy): prev=None; continue
    cls=[]
    for t in copy:
        parts=t.split(':'); st=parts[1]; wchan=parts[2] if len(parts)>2 else ''; stk=parts[3] if len(parts)>3 else ''
        if st=='R': cls.append('running'); continue
        if st=='S':
            if 'futex' in wchan or 'pipe' in wchan or wchan in ('do_sys_poll',): continue
            hit=[c for s,c in SIG if s in wchan]
            if hit: cls.append(hit[0])
            continue
        hit=[c for s,c in SIG if s in wchan or s in stk]
        cls.append(hit[0] if hit else 'other')
    t=float(r['t_mono']); wait=int(r['sched_wait_ns'])
    if prev and cls:
        dt=(t-prev[0])*1e9; a=len(cls)
        w=min(max((wait-prev[1])/(a*dt),0),1)
        sh={}
        for c in cls: sh[c]=sh.get(c,0)+1/a
        run=sh.get('running',0)
        if w<=run: sh['running']=run-w
        else:
            scale=(1-w)/(1-run) if run<1 else 0
            sh={k:v*scale for k,v in sh.items()}; sh['running']=0
        sh['cpu_wait']=w
        for k,v in sh.items(): acc[k]=acc.get(k,0)+v*dt
        n+=dt
    prev=(t,wait)
tot=sum(acc.values())
truth={k:v/tot for k,v in acc.items()}
summ=json.loads(open(sys.argv[2]).read().strip().split('\n')[-1])
sl={s['slice']:s['secs'] for s in summ['budget']['slices'] if s['slice'] not in ('flushing','paused')}
ct=sum(sl.values())
cs={('running' if k=='writing' else k):v/ct for k,v in sl.items()}
print(f"{'slice':16} {'copyscope':>10} {'truth 10ms':>10} {'diff':>6}")
for k in sorted(set(cs)|set(truth), key=lambda k:-max(cs.get(k,0),truth.get(k,0))):
    print(f"{k:16} {cs.get(k,0)*100:9.1f}% {truth.get(k,0)*100:9.1f}% {(cs.get(k,0)-truth.get(k,0))*100:+6.1f}")
print(f"truth ticks span {n/1e9:.1f} s, copyscope copying {ct:.1f} s, evidence {summ.get('evidence')}")
