"""Realistic manifests, as users write them or as ``kubectl get -o yaml`` prints them."""

from __future__ import annotations

from typing import Any

import yaml

INFLATE = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: inflate
spec:
  replicas: 0
  selector:
    matchLabels:
      app: inflate
  template:
    metadata:
      labels:
        app: inflate
    spec:
      terminationGracePeriodSeconds: 0
      securityContext:
        runAsUser: 1000
        runAsGroup: 3000
        fsGroup: 2000
      containers:
        - name: inflate
          image: public.ecr.aws/eks-distro/kubernetes/pause:3.7
          resources:
            requests:
              cpu: 1
              memory: 128Mi
            limits:
              memory: 128Mi
          securityContext:
            allowPrivilegeEscalation: false
      nodeSelector:
        karpenter.sh/capacity-type: spot
"""

WEB_DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  annotations:
    deployment.kubernetes.io/revision: "3"
  creationTimestamp: "2025-04-28T09:12:44Z"
  generation: 3
  labels:
    app.kubernetes.io/name: web
  name: web
  namespace: shop
  resourceVersion: "918273"
  uid: 0b6e2f9c-4d1a-4c7e-9f3b-2a8d5e6f7a10
spec:
  progressDeadlineSeconds: 600
  replicas: 3
  revisionHistoryLimit: 10
  selector:
    matchLabels:
      app.kubernetes.io/name: web
  strategy:
    rollingUpdate:
      maxSurge: 25%
      maxUnavailable: 0
    type: RollingUpdate
  template:
    metadata:
      annotations:
        prometheus.io/scrape: "true"
      creationTimestamp: null
      labels:
        app.kubernetes.io/name: web
        app.kubernetes.io/version: 2.4.1
    spec:
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
              - matchExpressions:
                  - key: kubernetes.io/arch
                    operator: In
                    values: [amd64, arm64]
                  - key: karpenter.k8s.aws/instance-cpu
                    operator: Gt
                    values: ["1"]
          preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 50
              preference:
                matchExpressions:
                  - key: karpenter.sh/capacity-type
                    operator: In
                    values: [spot]
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 100
              podAffinityTerm:
                labelSelector:
                  matchLabels:
                    app.kubernetes.io/name: web
                matchLabelKeys: [pod-template-hash]
                topologyKey: kubernetes.io/hostname
      containers:
        - name: web
          image: 123456789012.dkr.ecr.us-west-2.amazonaws.com/shop/web:2.4.1
          imagePullPolicy: IfNotPresent
          args: ["--port=8080", "--log-format=json"]
          env:
            - name: DATABASE_URL
              valueFrom:
                secretKeyRef:
                  key: url
                  name: web-db
            - name: POD_IP
              valueFrom:
                fieldRef:
                  apiVersion: v1
                  fieldPath: status.podIP
            - name: GOMAXPROCS
              valueFrom:
                resourceFieldRef:
                  divisor: "1"
                  resource: limits.cpu
          envFrom:
            - configMapRef:
                name: web-settings
          ports:
            - containerPort: 8080
              name: http
              protocol: TCP
          livenessProbe:
            failureThreshold: 3
            httpGet:
              path: /healthz
              port: http
              scheme: HTTP
            periodSeconds: 10
            successThreshold: 1
            timeoutSeconds: 1
          readinessProbe:
            failureThreshold: 3
            httpGet:
              path: /ready
              port: http
              scheme: HTTP
            periodSeconds: 5
            successThreshold: 1
            timeoutSeconds: 1
          startupProbe:
            failureThreshold: 30
            periodSeconds: 2
            successThreshold: 1
            tcpSocket:
              port: 8080
            timeoutSeconds: 1
          lifecycle:
            preStop:
              exec:
                command: ["/bin/sh", "-c", "sleep 10"]
          resources:
            requests:
              cpu: 500m
              memory: 512Mi
            limits:
              cpu: "2"
              memory: 512Mi
          securityContext:
            allowPrivilegeEscalation: false
            capabilities:
              drop: [ALL]
            readOnlyRootFilesystem: true
            runAsNonRoot: true
          terminationMessagePath: /dev/termination-log
          terminationMessagePolicy: File
          volumeMounts:
            - mountPath: /tmp
              name: tmp
            - mountPath: /etc/web
              name: config
              readOnly: true
      initContainers:
        - name: migrate
          image: 123456789012.dkr.ecr.us-west-2.amazonaws.com/shop/web:2.4.1
          command: [/app/migrate]
          resources:
            requests:
              cpu: 100m
              memory: 64Mi
        - name: log-shipper
          image: public.ecr.aws/aws-observability/aws-for-fluent-bit:2.32.0
          restartPolicy: Always
          resources:
            requests:
              cpu: 50m
              memory: 64Mi
            limits:
              memory: 128Mi
      dnsPolicy: ClusterFirst
      priorityClassName: shop-critical
      restartPolicy: Always
      schedulerName: default-scheduler
      securityContext:
        fsGroup: 2000
        runAsGroup: 3000
        runAsUser: 1000
        seccompProfile:
          type: RuntimeDefault
      serviceAccount: web
      serviceAccountName: web
      terminationGracePeriodSeconds: 45
      tolerations:
        - key: dedicated
          operator: Equal
          value: shop
          effect: NoSchedule
      topologySpreadConstraints:
        - labelSelector:
            matchLabels:
              app.kubernetes.io/name: web
          matchLabelKeys: [pod-template-hash]
          maxSkew: 1
          minDomains: 3
          nodeAffinityPolicy: Honor
          nodeTaintsPolicy: Ignore
          topologyKey: topology.kubernetes.io/zone
          whenUnsatisfiable: DoNotSchedule
        - labelSelector:
            matchLabels:
              app.kubernetes.io/name: web
          maxSkew: 2
          topologyKey: kubernetes.io/hostname
          whenUnsatisfiable: ScheduleAnyway
      volumes:
        - emptyDir:
            sizeLimit: 256Mi
          name: tmp
        - configMap:
            defaultMode: 420
            name: web-config
          name: config
status:
  availableReplicas: 3
  conditions:
    - lastTransitionTime: "2025-04-28T09:13:20Z"
      lastUpdateTime: "2025-04-28T09:13:20Z"
      message: Deployment has minimum availability.
      reason: MinimumReplicasAvailable
      status: "True"
      type: Available
  observedGeneration: 3
  readyReplicas: 3
  replicas: 3
  updatedReplicas: 3
"""

RUNNING_POD = """
apiVersion: v1
kind: Pod
metadata:
  creationTimestamp: "2025-05-01T10:00:00Z"
  generateName: web-6b9f7c8d4f-
  labels:
    app.kubernetes.io/name: web
    pod-template-hash: 6b9f7c8d4f
  name: web-6b9f7c8d4f-x2kq9
  namespace: shop
  ownerReferences:
    - apiVersion: apps/v1
      blockOwnerDeletion: true
      controller: true
      kind: ReplicaSet
      name: web-6b9f7c8d4f
      uid: 3f0c1d2e-5a6b-4c7d-8e9f-0a1b2c3d4e5f
  resourceVersion: "918300"
  uid: 9a8b7c6d-5e4f-4a3b-2c1d-0e9f8a7b6c5d
spec:
  containers:
    - name: web
      image: 123456789012.dkr.ecr.us-west-2.amazonaws.com/shop/web:2.4.1
      imagePullPolicy: IfNotPresent
      resources:
        requests:
          cpu: 500m
          memory: 512Mi
        limits:
          cpu: "2"
          memory: 512Mi
      terminationMessagePath: /dev/termination-log
      terminationMessagePolicy: File
      volumeMounts:
        - mountPath: /var/run/secrets/kubernetes.io/serviceaccount
          name: kube-api-access-7xk2p
          readOnly: true
  dnsPolicy: ClusterFirst
  enableServiceLinks: true
  nodeName: ip-10-0-1-2.us-west-2.compute.internal
  preemptionPolicy: PreemptLowerPriority
  priority: 0
  restartPolicy: Always
  schedulerName: default-scheduler
  securityContext: {}
  serviceAccount: default
  serviceAccountName: default
  terminationGracePeriodSeconds: 30
  tolerations:
    - effect: NoExecute
      key: node.kubernetes.io/not-ready
      operator: Exists
      tolerationSeconds: 300
    - effect: NoExecute
      key: node.kubernetes.io/unreachable
      operator: Exists
      tolerationSeconds: 300
  volumes:
    - name: kube-api-access-7xk2p
      projected:
        defaultMode: 420
        sources:
          - serviceAccountToken:
              expirationSeconds: 3607
              path: token
          - configMap:
              items:
                - key: ca.crt
                  path: ca.crt
              name: kube-root-ca.crt
status:
  conditions:
    - lastProbeTime: null
      lastTransitionTime: "2025-05-01T10:00:04Z"
      status: "True"
      type: PodReadyToStartContainers
    - lastProbeTime: null
      lastTransitionTime: "2025-05-01T10:00:00Z"
      status: "True"
      type: Initialized
    - lastProbeTime: null
      lastTransitionTime: "2025-05-01T10:00:09Z"
      status: "True"
      type: Ready
    - lastProbeTime: null
      lastTransitionTime: "2025-05-01T10:00:00Z"
      status: "True"
      type: PodScheduled
  containerStatuses:
    - containerID: containerd://4c5d6e7f8a9b0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d
      image: 123456789012.dkr.ecr.us-west-2.amazonaws.com/shop/web:2.4.1
      imageID: "123456789012.dkr.ecr.us-west-2.amazonaws.com/shop/web@sha256:\\
        0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"
      lastState: {}
      name: web
      ready: true
      restartCount: 0
      started: true
      state:
        running:
          startedAt: "2025-05-01T10:00:03Z"
  hostIP: 10.0.1.2
  hostIPs:
    - ip: 10.0.1.2
  phase: Running
  podIP: 10.0.1.77
  podIPs:
    - ip: 10.0.1.77
  qosClass: Burstable
  startTime: "2025-05-01T10:00:00Z"
"""

STATEFUL_SET = """
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: postgres
  namespace: shop
spec:
  serviceName: postgres
  replicas: 3
  podManagementPolicy: OrderedReady
  selector:
    matchLabels:
      app: postgres
  updateStrategy:
    type: RollingUpdate
    rollingUpdate:
      partition: 0
  persistentVolumeClaimRetentionPolicy:
    whenDeleted: Retain
    whenScaled: Retain
  minReadySeconds: 10
  template:
    metadata:
      labels:
        app: postgres
    spec:
      containers:
        - name: postgres
          image: postgres:16.3
          ports:
            - containerPort: 5432
              name: pg
          env:
            - name: PGDATA
              value: /var/lib/postgresql/data/pgdata
          resources:
            requests:
              cpu: "1"
              memory: 2Gi
              ephemeral-storage: 1Gi
            limits:
              memory: 2Gi
          volumeMounts:
            - name: data
              mountPath: /var/lib/postgresql/data
      terminationGracePeriodSeconds: 120
  volumeClaimTemplates:
    - apiVersion: v1
      kind: PersistentVolumeClaim
      metadata:
        creationTimestamp: null
        name: data
      spec:
        accessModes: [ReadWriteOnce]
        resources:
          requests:
            storage: 50Gi
        storageClassName: gp3
        volumeMode: Filesystem
      status:
        phase: Pending
"""

DAEMON_SET = """
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: node-exporter
  namespace: monitoring
  labels:
    app.kubernetes.io/name: node-exporter
spec:
  revisionHistoryLimit: 10
  selector:
    matchLabels:
      app.kubernetes.io/name: node-exporter
  updateStrategy:
    type: RollingUpdate
    rollingUpdate:
      maxSurge: 0
      maxUnavailable: 10%
  template:
    metadata:
      labels:
        app.kubernetes.io/name: node-exporter
    spec:
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
              - matchExpressions:
                  - key: eks.amazonaws.com/compute-type
                    operator: NotIn
                    values: [fargate]
      automountServiceAccountToken: false
      hostNetwork: true
      hostPID: true
      priorityClassName: system-node-critical
      containers:
        - name: node-exporter
          image: quay.io/prometheus/node-exporter:v1.8.2
          args: [--path.rootfs=/host]
          ports:
            - containerPort: 9100
              hostPort: 9100
              name: metrics
          resources:
            requests:
              cpu: 10m
              memory: 24Mi
            limits:
              memory: 64Mi
          securityContext:
            readOnlyRootFilesystem: true
          volumeMounts:
            - mountPath: /host
              mountPropagation: HostToContainer
              name: root
              readOnly: true
      nodeSelector:
        kubernetes.io/os: linux
      tolerations:
        - operator: Exists
      volumes:
        - hostPath:
            path: /
          name: root
"""

JOB = """
apiVersion: batch/v1
kind: Job
metadata:
  creationTimestamp: "2025-05-01T11:00:00Z"
  generation: 1
  labels:
    batch.kubernetes.io/controller-uid: 6e5d4c3b-2a19-4f8e-9d7c-6b5a4f3e2d1c
    batch.kubernetes.io/job-name: report
    controller-uid: 6e5d4c3b-2a19-4f8e-9d7c-6b5a4f3e2d1c
    job-name: report
  name: report
  namespace: shop
  uid: 6e5d4c3b-2a19-4f8e-9d7c-6b5a4f3e2d1c
spec:
  backoffLimit: 6
  completionMode: NonIndexed
  completions: 1
  manualSelector: false
  parallelism: 1
  podReplacementPolicy: TerminatingOrFailed
  selector:
    matchLabels:
      batch.kubernetes.io/controller-uid: 6e5d4c3b-2a19-4f8e-9d7c-6b5a4f3e2d1c
  suspend: false
  ttlSecondsAfterFinished: 3600
  template:
    metadata:
      creationTimestamp: null
      labels:
        batch.kubernetes.io/controller-uid: 6e5d4c3b-2a19-4f8e-9d7c-6b5a4f3e2d1c
        batch.kubernetes.io/job-name: report
        controller-uid: 6e5d4c3b-2a19-4f8e-9d7c-6b5a4f3e2d1c
        job-name: report
    spec:
      containers:
        - name: report
          image: 123456789012.dkr.ecr.us-west-2.amazonaws.com/shop/report:1.0.0
          command: [/app/report, --since=24h]
          resources:
            requests:
              cpu: "2"
              memory: 4Gi
              nvidia.com/gpu: 1
            limits:
              memory: 4Gi
              nvidia.com/gpu: 1
      restartPolicy: Never
      tolerations:
        - key: nvidia.com/gpu
          operator: Exists
          effect: NoSchedule
status:
  active: 1
  ready: 1
  startTime: "2025-05-01T11:00:01Z"
  terminating: 0
  uncountedTerminatedPods: {}
"""

REPLICA_SET = """
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  labels:
    app: inflate
    pod-template-hash: 5d8f6c7b9
  name: inflate-5d8f6c7b9
  namespace: default
  ownerReferences:
    - apiVersion: apps/v1
      blockOwnerDeletion: true
      controller: true
      kind: Deployment
      name: inflate
      uid: 1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d
spec:
  replicas: 5
  selector:
    matchLabels:
      app: inflate
      pod-template-hash: 5d8f6c7b9
  template:
    metadata:
      creationTimestamp: null
      labels:
        app: inflate
        pod-template-hash: 5d8f6c7b9
    spec:
      containers:
        - name: inflate
          image: public.ecr.aws/eks-distro/kubernetes/pause:3.7
          resources:
            requests:
              cpu: "1"
status:
  fullyLabeledReplicas: 5
  observedGeneration: 1
  replicas: 5
"""

PDB = """
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  creationTimestamp: "2025-04-28T09:12:44Z"
  generation: 1
  name: web
  namespace: shop
spec:
  minAvailable: 2
  selector:
    matchLabels:
      app.kubernetes.io/name: web
  unhealthyPodEvictionPolicy: AlwaysAllow
status:
  conditions:
    - lastTransitionTime: "2025-04-28T09:13:20Z"
      message: ""
      observedGeneration: 1
      reason: SufficientPods
      status: "True"
      type: DisruptionAllowed
  currentHealthy: 3
  desiredHealthy: 2
  disruptionsAllowed: 1
  expectedPods: 3
  observedGeneration: 1
"""

KARPENTER_NODE = """
apiVersion: v1
kind: Node
metadata:
  annotations:
    alpha.kubernetes.io/provided-node-ip: 10.0.1.2
    karpenter.k8s.aws/ec2nodeclass-hash: "4023812318437526481"
    karpenter.sh/nodepool-hash: "12393960163388511505"
    node.alpha.kubernetes.io/ttl: "0"
    volumes.kubernetes.io/controller-managed-attach-detach: "true"
  creationTimestamp: "2025-05-01T09:58:12Z"
  finalizers:
    - karpenter.sh/termination
  labels:
    beta.kubernetes.io/arch: arm64
    beta.kubernetes.io/instance-type: m7g.large
    beta.kubernetes.io/os: linux
    failure-domain.beta.kubernetes.io/region: us-west-2
    failure-domain.beta.kubernetes.io/zone: us-west-2a
    k8s.io/cloud-provider-aws: 5a1f0e4c9b8d7e6f5a4b3c2d1e0f9a8b
    karpenter.k8s.aws/ec2nodeclass: default
    karpenter.k8s.aws/instance-category: m
    karpenter.k8s.aws/instance-cpu: "2"
    karpenter.k8s.aws/instance-family: m7g
    karpenter.k8s.aws/instance-generation: "7"
    karpenter.k8s.aws/instance-memory: "8192"
    karpenter.k8s.aws/instance-size: large
    karpenter.sh/capacity-type: spot
    karpenter.sh/initialized: "true"
    karpenter.sh/nodepool: default
    karpenter.sh/registered: "true"
    kubernetes.io/arch: arm64
    kubernetes.io/hostname: ip-10-0-1-2.us-west-2.compute.internal
    kubernetes.io/os: linux
    node.kubernetes.io/instance-type: m7g.large
    topology.k8s.aws/zone-id: usw2-az1
    topology.kubernetes.io/region: us-west-2
    topology.kubernetes.io/zone: us-west-2a
  name: ip-10-0-1-2.us-west-2.compute.internal
  ownerReferences:
    - apiVersion: karpenter.sh/v1
      blockOwnerDeletion: true
      kind: NodeClaim
      name: default-8xk2p
      uid: 2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e
  resourceVersion: "918500"
  uid: 7c6b5a49-3827-4615-a4f3-e2d1c0b9a887
spec:
  providerID: aws:///us-west-2a/i-0123456789abcdef0
  taints:
    - effect: NoSchedule
      key: karpenter.sh/disrupted
      timeAdded: "2025-05-01T12:00:00Z"
status:
  addresses:
    - address: 10.0.1.2
      type: InternalIP
    - address: ip-10-0-1-2.us-west-2.compute.internal
      type: InternalDNS
    - address: ip-10-0-1-2.us-west-2.compute.internal
      type: Hostname
  allocatable:
    cpu: 1930m
    ephemeral-storage: "18242267924"
    hugepages-1Gi: "0"
    hugepages-2Mi: "0"
    hugepages-32Mi: "0"
    hugepages-64Ki: "0"
    memory: 7291520Ki
    pods: "29"
  capacity:
    cpu: "2"
    ephemeral-storage: 20893676Ki
    hugepages-1Gi: "0"
    hugepages-2Mi: "0"
    hugepages-32Mi: "0"
    hugepages-64Ki: "0"
    memory: 7980672Ki
    pods: "29"
  conditions:
    - lastHeartbeatTime: "2025-05-01T12:01:44Z"
      lastTransitionTime: "2025-05-01T09:58:12Z"
      message: kubelet has sufficient memory available
      reason: KubeletHasSufficientMemory
      status: "False"
      type: MemoryPressure
    - lastHeartbeatTime: "2025-05-01T12:01:44Z"
      lastTransitionTime: "2025-05-01T09:58:12Z"
      message: kubelet has no disk pressure
      reason: KubeletHasNoDiskPressure
      status: "False"
      type: DiskPressure
    - lastHeartbeatTime: "2025-05-01T12:01:44Z"
      lastTransitionTime: "2025-05-01T09:58:12Z"
      message: kubelet has sufficient PID available
      reason: KubeletHasSufficientPID
      status: "False"
      type: PIDPressure
    - lastHeartbeatTime: "2025-05-01T12:01:44Z"
      lastTransitionTime: "2025-05-01T09:58:30Z"
      message: kubelet is posting ready status
      reason: KubeletReady
      status: "True"
      type: Ready
  daemonEndpoints:
    kubeletEndpoint:
      Port: 10250
  features:
    supplementalGroupsPolicy: true
  images:
    - names:
        - "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni@sha256:\\
          5f3c1d0e9b8a7f6e5d4c3b2a19f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a190"
        - 602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.19.2-eksbuild.1
      sizeBytes: 45012345
    - names:
        - public.ecr.aws/eks-distro/kubernetes/pause:3.7
      sizeBytes: 268519
  nodeInfo:
    architecture: arm64
    bootID: 5d3f1c5e-9a2b-4f6e-8c1d-7b0a9e8f6d5c
    containerRuntimeVersion: containerd://1.7.27
    kernelVersion: 6.1.134-152.225.amzn2023.aarch64
    kubeProxyVersion: ""
    kubeletVersion: v1.33.0-eks-802817d
    machineID: ec2a8c1d0f3b4e5a9c7d6b5a4e3f2d1c
    operatingSystem: linux
    osImage: Amazon Linux 2023.7.20250512
    swap: {}
    systemUUID: ec2a8c1d-0f3b-4e5a-9c7d-6b5a4e3f2d1c
  runtimeHandlers:
    - features:
        recursiveReadOnlyMounts: true
        userNamespaces: true
      name: runc
    - features:
        recursiveReadOnlyMounts: true
        userNamespaces: true
      name: ""
  volumesAttached:
    - devicePath: ""
      name: kubernetes.io/csi/ebs.csi.aws.com^vol-0a1b2c3d4e5f67890
  volumesInUse:
    - kubernetes.io/csi/ebs.csi.aws.com^vol-0a1b2c3d4e5f67890
"""

KIND_NODE = """
apiVersion: v1
kind: Node
metadata:
  labels:
    kubernetes.io/hostname: kind-control-plane
    node-role.kubernetes.io/control-plane: ""
  name: kind-control-plane
spec:
  podCIDR: 10.244.0.0/24
  podCIDRs:
    - 10.244.0.0/24
    - fd00:10:244::/64
  providerID: kind://docker/kind/kind-control-plane
  taints:
    - effect: NoSchedule
      key: node-role.kubernetes.io/control-plane
  unschedulable: false
status:
  allocatable:
    cpu: "8"
    memory: 16318412Ki
    pods: "110"
  capacity:
    cpu: "8"
    memory: 16318412Ki
    pods: "110"
  config: {}
  nodeInfo:
    architecture: amd64
    bootID: 0f9e8d7c-6b5a-4948-3726-150f4e3d2c1b
    containerRuntimeVersion: containerd://2.1.1
    kernelVersion: 6.8.0-60-generic
    kubeProxyVersion: v1.33.1
    kubeletVersion: v1.33.1
    machineID: 3d2c1b0a9f8e4d7c6b5a493827160f5e
    operatingSystem: linux
    osImage: Debian GNU/Linux 12 (bookworm)
    systemUUID: 1a2b3c4d-5e6f-4071-8293-a4b5c6d7e8f9
  phase: Running
"""

ALL: dict[str, str] = {
    "inflate-deployment": INFLATE,
    "web-deployment": WEB_DEPLOYMENT,
    "running-pod": RUNNING_POD,
    "statefulset": STATEFUL_SET,
    "daemonset": DAEMON_SET,
    "job": JOB,
    "replicaset": REPLICA_SET,
    "pdb": PDB,
    "karpenter-node": KARPENTER_NODE,
    "kind-node": KIND_NODE,
}
"""Every realistic manifest, by a short name."""


def load(text: str) -> dict[str, Any]:
    """A fresh dict of one YAML manifest."""
    data = yaml.safe_load(text)
    assert isinstance(data, dict)
    return data
